package yamldoc

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Scalars of the fast decoder's YAML subset: plain ones resolved as
// yaml.v2 resolves them, and quoted ones unescaped.

// resolvePlain gives the value yaml.v2 resolves a plain scalar to, where
// DecodeFast is sure of it: null, a YAML 1.1 boolean, a decimal integer
// that fits int64, or a string that is no number, timestamp or special
// float. Anything else gives ErrUnsupported.
func resolvePlain(s string) (any, error) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, nil
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, nil
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
		"-.inf", "-.Inf", "-.INF", "<<":
		return nil, ErrUnsupported
	}
	switch c := s[0]; {
	case c == '.':
		// yaml.v2 tries exactly this.
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return nil, ErrUnsupported
		}
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		return resolveNumeric(s)
	}
	return s, nil
}

// resolveNumeric resolves a plain scalar that starts with a sign or a
// digit. yaml.v2 tries it as a timestamp, then with strconv.ParseInt and
// ParseUint in base 0 (without underscores), then as a float, then as 0b
// binary; a string is what none of these read. resolveNumeric reads
// decimal integers that fit int64, and strings that none of these could
// read by their characters alone, such as a hex digest with a letter;
// everything in between gives ErrUnsupported.
func resolveNumeric(s string) (any, error) {
	if isDecimal(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		return nil, ErrUnsupported
	}
	if len(s) > 4 && isDigits(s[:4]) && s[4] == '-' {
		return nil, ErrUnsupported // maybe a timestamp
	}
	plain := strings.ReplaceAll(s, "_", "")
	u := strings.TrimLeft(plain, "+-")
	if len(u) >= 2 && u[0] == '0' && strings.IndexByte("xXoObB", u[1]) >= 0 {
		return nil, ErrUnsupported // maybe hex, octal or binary
	}
	if isDigits(u) || strings.Trim(plain, "0123456789+-.eE") == "" {
		return nil, ErrUnsupported // maybe octal, beyond int64, or a float
	}
	return s, nil
}

// isDigits reports whether s holds only ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDecimal reports whether s matches [-+]?(0|[1-9][0-9]*).
func isDecimal(s string) bool {
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	return s != "" && (s[0] != '0' || len(s) == 1) && isDigits(s)
}

// quoted reads the single- or double-quoted scalar at the start of s, which
// must end on the same line. It returns the value and the index after the
// closing quote.
func quoted(s string) (string, int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case q:
			if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
				return unescape(s)
			}
			return s[1:i], i + 1, nil
		case '\\':
			if q == '"' {
				return unescape(s)
			}
		}
	}
	return "", 0, ErrUnsupported
}

// unescape reads a quoted scalar that holds escapes: a doubled quote in
// single quotes; \" \\ \n \t and \uXXXX in double quotes. Other escapes
// give ErrUnsupported.
func unescape(s string) (string, int, error) {
	q := s[0]
	b := make([]byte, 0, len(s))
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' && q == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b = append(b, '\'')
				i++
				continue
			}
			return string(b), i + 1, nil
		case c == '"' && q == '"':
			return string(b), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 == len(s) {
				return "", 0, ErrUnsupported
			}
			i++
			switch s[i] {
			case '"', '\\':
				b = append(b, s[i])
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s[i+1:])
				if !ok {
					return "", 0, ErrUnsupported
				}
				b = utf8.AppendRune(b, r)
				i += 4
			default:
				return "", 0, ErrUnsupported
			}
		default:
			b = append(b, c)
		}
	}
	return "", 0, ErrUnsupported
}

// hex4 reads the four hex digits of a \u escape. Surrogates, which libyaml
// refuses, are not ok.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil || v >= 0xd800 && v <= 0xdfff {
		return 0, false
	}
	return rune(v), true
}
