// Package convert turns the OpenAPI YAML source into its JSON form, the one
// way both the generator and the freshness test use.
package convert

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// YAMLToJSON converts a YAML document to indented JSON with sorted keys.
func YAMLToJSON(src []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	if err := checkKeys(v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkKeys refuses mapping keys that are not strings (YAML allows them,
// JSON does not): a response code written 200 instead of "200".
func checkKeys(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if err := checkKeys(x); err != nil {
				return err
			}
		}
	case map[any]any:
		for k := range v {
			return fmt.Errorf("non-string key %v", k)
		}
	case []any:
		for _, x := range v {
			if err := checkKeys(x); err != nil {
				return err
			}
		}
	}
	return nil
}
