package wire

// The bodies of the API's keys (/v1/auth/keys, admin) and of the issuer's
// public signing keys (/v1/signing-keys), with the primitives' conventions
// (primitives.go).

// KeyRequest is the body that creates an API key (fields in the order of
// the map clients sent).
type KeyRequest struct {
	Name      *string  `json:"name,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Role      *string  `json:"role,omitempty"`
}

// Key is an API key as the server lists it; Secret is only in the answer
// that creates it.
type Key struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Role      string   `json:"role"`
	Resources []string `json:"resources"`
	CreatedAt Time     `json:"createdAt"`
	Secret    string   `json:"secret,omitempty"`
}

// Keys answers GET /v1/auth/keys.
type Keys struct {
	Keys []Key `json:"keys"`
}

// KeyRevoked answers DELETE /v1/auth/keys/{id}.
type KeyRevoked struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked"`
}

// SigningKey is an issuer's public key as /v1/signing-keys lists it. There
// is no field for a private key: the wire form cannot leak one.
type SigningKey struct {
	KeyID     string `json:"keyId"`
	Alg       string `json:"alg"`
	PublicKey string `json:"publicKey"`
	CreatedAt Time   `json:"createdAt"`
	Active    bool   `json:"active"`
}

// SigningKeys answers GET /v1/signing-keys.
type SigningKeys struct {
	Issuer string       `json:"issuer"`
	Keys   []SigningKey `json:"keys"`
}

// SigningKeyRemoved answers DELETE /v1/signing-keys/{keyId}.
type SigningKeyRemoved struct {
	KeyID   string `json:"keyId"`
	Removed bool   `json:"removed"`
}
