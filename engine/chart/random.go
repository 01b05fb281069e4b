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
// parent, whose seed differs, other values. Sprig's other functions whose
// value differs on every render (the clock, keys, certificates, salted
// hashes) are not seeded: the caller refuses them (Options.Funcs).
var SeededFuncs = []string{"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle", "uuidv4"}

// errNoSeed is the error of a seeded function in a render without a seed.
var errNoSeed = errors.New("a random function needs the render's seed, and this render has none")

// Character sets of sprig's (goutils') random strings.
const (
	alpha   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	numeric = "0123456789"
)

// rng returns the generator of one call: HMAC-SHA256 of the seed over
// the file being rendered, the function, its arguments and how many
// identical calls this file made before, as a ChaCha8 key. A call's value
// depends on nothing else, so an edit elsewhere in the chart does not
// change it, and two identical calls in one file differ.
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

// randString is count characters drawn from chars.
func (r *renderer) randString(fn string, count int, chars string) (string, error) {
	g, err := r.rng(fn, count)
	if err != nil {
		return "", err
	}
	if count < 0 {
		return "", fmt.Errorf("%s: count %d is negative", fn, count)
	}
	if count > 1<<20 {
		return "", fmt.Errorf("%s: count %d is over 1 MiB", fn, count)
	}
	var b strings.Builder
	for range count {
		b.WriteByte(chars[g.IntN(len(chars))])
	}
	return b.String(), nil
}

// seededFuncs binds the random functions to this renderer's seed.
func (r *renderer) seededFuncs() template.FuncMap {
	ascii := make([]byte, 0, 95)
	for c := byte(32); c < 127; c++ {
		ascii = append(ascii, c)
	}
	return template.FuncMap{
		"randAlpha":    func(n int) (string, error) { return r.randString("randAlpha", n, alpha) },
		"randAlphaNum": func(n int) (string, error) { return r.randString("randAlphaNum", n, alpha+numeric) },
		"randNumeric":  func(n int) (string, error) { return r.randString("randNumeric", n, numeric) },
		"randAscii":    func(n int) (string, error) { return r.randString("randAscii", n, string(ascii)) },
		"randBytes": func(n int) (string, error) {
			g, err := r.rng("randBytes", n)
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
		},
		"randInt": func(min, max int) (int, error) {
			g, err := r.rng("randInt", min, max)
			if err != nil {
				return 0, err
			}
			if max <= min {
				return 0, fmt.Errorf("randInt: max %d is not above min %d", max, min)
			}
			return min + g.IntN(max-min), nil
		},
		"shuffle": func(s string) (string, error) {
			g, err := r.rng("shuffle", s)
			if err != nil {
				return "", err
			}
			rs := []rune(s)
			g.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			return string(rs), nil
		},
		"uuidv4": func() (string, error) {
			g, err := r.rng("uuidv4")
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
		},
	}
}
