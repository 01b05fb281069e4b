package yamldoc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Decode parses one YAML document into the JSON-compatible values that
// unstructured objects hold (map[string]any, []any, string, int64, float64,
// bool, nil). It gives the same result as sigs.k8s.io/yaml followed by
// Kubernetes' JSON decoding, which is what kubectl does, but without the
// YAML → JSON → decode round trip: it walks the YAML parser's output once.
// The equivalence is checked by FuzzDecodeMatchesSigsYAML. One difference
// is deliberate: where two keys of a mapping become the same string (1 and
// "1"), sigs.k8s.io/yaml keeps either value, in map order, and Decode
// fails, so that a render never depends on map order.
//
// Documents in the YAML subset that templates produce are read by
// DecodeFast; all others, and every invalid one, by yaml.v2.
func Decode(doc []byte) (map[string]any, error) {
	if m, err := DecodeFast(doc); !errors.Is(err, ErrUnsupported) {
		return m, err
	}
	return DecodeV2(doc)
}

// DecodeV2 is Decode through yaml.v2, for any YAML document.
func DecodeV2(doc []byte) (map[string]any, error) {
	var raw any
	if err := yamlv2.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, nil
	}
	v, err := toJSONValue(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a document must be a YAML mapping (an object), not %T", v)
	}
	return m, nil
}

// toJSONValue converts what yaml.v2 produces into JSON-compatible values.
func toJSONValue(v any) (any, error) {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			ks, err := keyString(k)
			if err != nil {
				return nil, err
			}
			if _, dup := m[ks]; dup {
				// sigs.k8s.io/yaml keeps either value, in map order;
				// a render must not depend on map order.
				return nil, fmt.Errorf("%w: %q", errKeyCollision, ks)
			}
			if m[ks], err = toJSONValue(val); err != nil {
				return nil, fmt.Errorf("%s: %w", ks, err)
			}
		}
		return m, nil
	case []any:
		a := make([]any, len(t))
		for i, val := range t {
			var err error
			if a[i], err = toJSONValue(val); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return a, nil
	case int:
		return int64(t), nil
	case int64:
		return t, nil
	case uint64:
		if t <= math.MaxInt64 {
			return int64(t), nil
		}
		return float64(t), nil
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fmt.Errorf("unsupported value %v", t)
		}
		return floatValue(t), nil
	case time.Time:
		return t.Format(time.RFC3339Nano), nil
	case string:
		return validUTF8(t), nil
	case bool, nil:
		return t, nil
	default:
		return nil, fmt.Errorf("unsupported YAML value of type %T", v)
	}
}

// errKeyCollision reports two keys of one mapping that become the same
// string, such as 1 and "1".
var errKeyCollision = errors.New("two keys of a mapping convert to the same string")

// floatValue is what a float becomes through JSON. JSON has one number
// type; Kubernetes decodes a number written without a fraction or exponent
// that fits int64 as int64, and encoding/json writes integral floats below
// 1e21 that way, in their shortest form. So 1.0 and 1e17 become int64, and
// 20000000000000008 (a float, as 0020000000000000008 is not octal) becomes
// 20000000000000010, the shortest decimal that parses to the same float.
func floatValue(f float64) any {
	if f != math.Trunc(f) || math.Abs(f) >= 1e21 {
		return f
	}
	if math.Abs(f) < 1<<53 {
		return int64(f)
	}
	if i, err := strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err == nil {
		return i
	}
	return f
}

// keyString converts a mapping key the way sigs.k8s.io/yaml does, including
// its formatting of float keys at float32 precision, and its refusal of
// null keys and of integer keys beyond int64.
func keyString(k any) (string, error) {
	switch t := k.(type) {
	case string:
		return validUTF8(t), nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case float64:
		switch s := strconv.FormatFloat(t, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(t), nil
	default:
		return "", fmt.Errorf("unsupported map key of type %T: %v", k, k)
	}
}

// validUTF8 replaces each byte of s that is not valid UTF-8 with U+FFFD,
// as encoding/json does. Only !!binary values can hold such bytes.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
