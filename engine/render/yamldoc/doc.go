// Package yamldoc reads YAML streams into the JSON-compatible values that
// unstructured objects hold (map[string]any, []any, string, int64,
// float64, bool, nil), as kubectl would read them.
//
// Data flows one way:
//
//	stream ──► Split: documents at "---" lines, each with its offset
//	       ──► Decode: one document ──► DecodeFast, for the plain block
//	                                    YAML that templates write
//	                                ──► DecodeV2 (yaml.v2), for any other
//	                                    document and every invalid one
//	       ──► map[string]any, or yaml.v2's error with its line in the document
//
// Decode gives what sigs.k8s.io/yaml followed by Kubernetes' JSON decoding
// gives (FuzzDecodeMatchesSigsYAML), and DecodeFast what DecodeV2 gives
// wherever it reads a document (FuzzFastDecodeMatchesYAMLv2). The package
// knows nothing of templates: locating an error at a template's file and
// line, validating and caching decoded documents is engine/render's work.
package yamldoc
