package client

import (
	"context"
	"net/http"
	"time"
)

// Key is an API key as the server lists it. Secret is set only in the
// answer of CreateKey: the server keeps nothing but its hash.
type Key struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Resources []string  `json:"resources"`
	CreatedAt time.Time `json:"createdAt"`
	Secret    string    `json:"secret,omitempty"`
}

// CreateKey makes an API key (admin): role is viewer, client, guard or
// admin; resources, when given, limits the key to ids with those prefixes.
func (c *Client) CreateKey(ctx context.Context, name, role string, resources []string) (Key, error) {
	var k Key
	in := map[string]any{"name": name, "role": role}
	if len(resources) > 0 {
		in["resources"] = resources
	}
	err := c.call(ctx, http.MethodPost, c.path("/v1/auth/keys"), c.adminHeader(), in, &k, nil)
	return k, err
}

// Keys lists the API keys (admin), without secrets.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	err := c.call(ctx, http.MethodGet, c.path("/v1/auth/keys"), c.adminHeader(), nil, &out, nil)
	return out.Keys, err
}

// RevokeKey deletes an API key (admin); it stops working at once, on open
// streams too.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, c.path("/v1/auth/keys/"+id), c.adminHeader(), nil, nil, nil)
}

// adminHeader carries the admin token when one is set, else the key.
func (c *Client) adminHeader() http.Header {
	h := http.Header{}
	if c.admin != "" {
		h.Set("Authorization", "Bearer "+c.admin)
	}
	return h
}
