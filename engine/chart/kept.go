package chart

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/sprig/v3"
)

// GeneratedFuncs are sprig's functions that make a key, a certificate, a
// salted hash or a ciphertext. No seed makes them repeat (Go's crypto
// packages draw their own randomness, and a certificate is valid from the
// time it is made), so a render with a seed keeps what each call made
// instead: Result.Generated holds each value under a key (GeneratedKey),
// and a later render given those values in Env.Kept returns the kept value
// for the same call with the same inputs, without calling sprig. A render
// without a seed fails where one is called, as the random functions do.
var GeneratedFuncs = []string{
	"bcrypt", "htpasswd", "encryptAES", "genPrivateKey",
	"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
}

// MaxGenerated bounds the generating calls of one render: each value is
// kept in a Secret, which the API server caps at 1 MiB, and each key
// takes tens of milliseconds to make.
const MaxGenerated = 100

// GeneratedKeyPrefix starts every key of Result.Generated.
const GeneratedKeyPrefix = "gen."

// sprigFuncs are sprig's own functions, which the generated functions
// call for a value they have not kept.
var sprigFuncs = sprig.TxtFuncMap()

// generatedFunc is sprig's function fn, its values kept under keys made
// from key (the call's site) and the call's inputs. It has sprig's own
// signature, so that text/template converts its arguments as under Helm,
// and returns sprig's own types (a certificate's .Cert and .Key, which
// genSignedCert takes back).
func (r *renderer) generatedFunc(fn, key string) any {
	orig := reflect.ValueOf(sprigFuncs[fn])
	if !orig.IsValid() {
		panic("chart: sprig has no function " + fn)
	}
	return reflect.MakeFunc(orig.Type(), func(args []reflect.Value) []reflect.Value {
		return r.generate(key, orig, args)
	}).Interface()
}

// generate returns the kept value of one call, or calls sprig and keeps
// what it made.
func (r *renderer) generate(key string, orig reflect.Value, args []reflect.Value) []reflect.Value {
	if r.seed == nil {
		// A value made afresh on every render would be rewritten on
		// every reconcile. (A chart whose templates call one is rendered
		// with a seed; text that tpl parses may call one that none does.)
		panic(errNoSeed)
	}
	typ := orig.Type()
	k := r.generatedKey(key, args)
	if _, ok := r.gen[k]; !ok && len(r.gen) >= MaxGenerated {
		// text/template turns the panic into the call's error, at its line.
		panic(fmt.Errorf("more than %d keys, certificates and hashes in one render: each is kept in the parent's seed Secret", MaxGenerated))
	}
	if enc, ok := r.kept[k]; ok {
		if v, err := decodeGenerated(enc, typ.Out(0)); err == nil {
			r.gen[k] = enc
			return results(typ, v)
		}
		// A kept value that does not decode (edited by hand) is made again.
	}
	out := orig.Call(args)
	if len(out) == 2 && !out[1].IsNil() {
		return out
	}
	enc, err := encodeGenerated(out[0])
	if err != nil {
		// text/template turns a function's panic into the call's error,
		// at the template's line.
		panic(fmt.Errorf("keep the generated value: %w", err))
	}
	r.gen[k] = enc
	return out
}

// results are a function of type typ's return values for v: v, and a
// nil error when typ returns one.
func results(typ reflect.Type, v reflect.Value) []reflect.Value {
	if typ.NumOut() == 2 {
		return []reflect.Value{v, reflect.Zero(typ.Out(1))}
	}
	return []reflect.Value{v}
}

// GeneratedKey names one call's value: HMAC-SHA256 of the render's seed
// over the file being rendered, the call's site (for text that tpl
// parsed, its function), its inputs, and how many calls of the same site
// and inputs the file made before. An edit of the inputs (a new password
// to hash, another common name) makes a new value; nothing else does.
func (r *renderer) generatedKey(key string, args []reflect.Value) string {
	var in strings.Builder
	for _, a := range args {
		fmt.Fprintf(&in, "%#v\x00", a.Interface())
	}
	call := r.file + "\x00generated\x00" + key + "\x00" + in.String()
	n := r.calls[call]
	r.calls[call] = n + 1
	m := hmac.New(sha256.New, r.seed)
	m.Write([]byte(call + "\x00" + strconv.Itoa(n)))
	return GeneratedKeyPrefix + hex.EncodeToString(m.Sum(nil)[:20])
}

// encodeGenerated is a generated value as kept: a string as it is, a
// certificate as JSON.
func encodeGenerated(v reflect.Value) (string, error) {
	if v.Kind() == reflect.String {
		return v.String(), nil
	}
	b, err := json.Marshal(v.Interface())
	return string(b), err
}

// decodeGenerated is a kept value as a value of type t.
func decodeGenerated(enc string, t reflect.Type) (reflect.Value, error) {
	if t.Kind() == reflect.String {
		return reflect.ValueOf(enc).Convert(t), nil
	}
	v := reflect.New(t)
	if err := json.Unmarshal([]byte(enc), v.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return v.Elem(), nil
}

// isGenerated reports whether fn is one of GeneratedFuncs.
func isGenerated(fn string) bool { return slices.Contains(GeneratedFuncs, fn) }
