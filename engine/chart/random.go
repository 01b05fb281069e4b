package chart

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"text/template"
)

// SeededFuncs are sprig's random functions that a chart may call: each
// call's value comes from the render's seed (Env.Seed), so a parent gets
// the same values on every render, in every Loom process, and another
// parent, whose seed differs, other values. Keys, certificates and salted
// hashes cannot be seeded: they are kept instead (GeneratedFuncs). The
// clock is neither: the caller refuses it (Options.Funcs).
var SeededFuncs = []string{"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle", "uuidv4"}

// errNoSeed is the error of a seeded function in a render without a seed.
var errNoSeed = errors.New("a random or generating function needs the render's seed, and this render has none " +
	"(in Loom: a call that only text given to tpl makes, which the chart's own templates never make)")

// Character sets of sprig's (goutils') random strings.
const (
	alpha   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	numeric = "0123456789"
)

// rng returns the generator of one call: HMAC-SHA256 of the seed over
// the file being rendered, the call's site (see site; for text that tpl
// parsed, which has no site, the function), its arguments and how many
// calls with the same key this file made before (a site in a loop or a
// define included twice), as a ChaCha8 key. A call's value depends on
// nothing else, so an edit elsewhere in the chart does not change it,
// and two calls at two sites differ.
func (r *renderer) rng(fn string, args ...any) (*rand.Rand, error) {
	if r.seed == nil {
		return nil, errNoSeed
	}
	key := r.file + "\x00" + fn + "\x00" + fmt.Sprint(args...)
	n := r.calls[key]
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[key] = n + 1
	m := hmac.New(sha256.New, r.seed)
	m.Write([]byte(key + "\x00" + strconv.Itoa(n)))
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return rand.New(rand.NewChaCha8(k)), nil
}

// randString is count characters drawn from chars, keyed by key.
func (r *renderer) randString(key string, count int, chars string) (string, error) {
	g, err := r.rng(key, count)
	if err != nil {
		return "", err
	}
	if count < 0 {
		return "", fmt.Errorf("count %d is negative", count)
	}
	if count > 1<<20 {
		return "", fmt.Errorf("count %d is over 1 MiB", count)
	}
	var b strings.Builder
	for range count {
		b.WriteByte(chars[g.IntN(len(chars))])
	}
	return b.String(), nil
}

// siteFuncs binds each site's renamed function (siteFunc) to the
// seeded function it calls, keyed by the site.
func (r *renderer) siteFuncs() template.FuncMap {
	m := template.FuncMap{}
	for i, s := range r.sites {
		if isGenerated(s.fn) {
			m[siteFunc(i)] = r.generatedFunc(s.fn, "site\x00"+s.key)
			continue
		}
		m[siteFunc(i)] = r.seededFunc(s.fn, "site\x00"+s.key)
	}
	return m
}

// seededFuncs binds the random and generating functions, as text that
// tpl parses calls them, to this renderer's seed and kept values.
func (r *renderer) seededFuncs() template.FuncMap {
	m := template.FuncMap{}
	for _, fn := range SeededFuncs {
		m[fn] = r.seededFunc(fn, "tpl\x00"+fn)
	}
	for _, fn := range GeneratedFuncs {
		m[fn] = r.generatedFunc(fn, "tpl\x00"+fn)
	}
	return m
}

// seededFunc is the random function fn, its values keyed by key.
func (r *renderer) seededFunc(fn, key string) any {
	str := func(n int, chars string) (string, error) { return r.randString(key, n, chars) }
	switch fn {
	case "randAlpha":
		return func(n int) (string, error) { return str(n, alpha) }
	case "randAlphaNum":
		return func(n int) (string, error) { return str(n, alpha+numeric) }
	case "randNumeric":
		return func(n int) (string, error) { return str(n, numeric) }
	case "randAscii":
		return func(n int) (string, error) { return str(n, ascii) }
	case "randBytes":
		return func(n int) (string, error) {
			g, err := r.rng(key, n)
			if err != nil {
				return "", err
			}
			if n < 0 || n > 1<<20 {
				return "", fmt.Errorf("randBytes: count %d out of range", n)
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(g.Uint32())
			}
			return base64.StdEncoding.EncodeToString(b), nil
		}
	case "randInt":
		return func(min, max int) (int, error) {
			g, err := r.rng(key, min, max)
			if err != nil {
				return 0, err
			}
			if max <= min {
				return 0, fmt.Errorf("randInt: max %d is not above min %d", max, min)
			}
			return min + g.IntN(max-min), nil
		}
	case "shuffle":
		return func(s string) (string, error) {
			g, err := r.rng(key, s)
			if err != nil {
				return "", err
			}
			rs := []rune(s)
			g.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			return string(rs), nil
		}
	case "uuidv4":
		return func() (string, error) {
			g, err := r.rng(key)
			if err != nil {
				return "", err
			}
			var u [16]byte
			for i := range u {
				u[i] = byte(g.Uint32())
			}
			u[6] = u[6]&0x0f | 0x40 // version 4
			u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
			return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
		}
	}
	panic("chart: no seeded function " + fn)
}

// ascii is sprig's randAscii alphabet: printable ASCII.
var ascii = func() string {
	var b strings.Builder
	for c := byte(32); c < 127; c++ {
		b.WriteByte(c)
	}
	return b.String()
}()
