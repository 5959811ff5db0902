package auth

import (
	"context"
	"fmt"
)

// Reload makes the keyring hold what its store holds, for a store that
// other processes change too (a cluster's nodes share their keys): keys
// created elsewhere start to authenticate, and keys deleted elsewhere are
// revoked here as Revoke would, their streams seeing Revoked closed. A key
// whose stored hash is unchanged keeps its principal.
func (k *Keyring) Reload(ctx context.Context) error {
	if k.store == nil {
		return nil
	}
	for {
		k.mu.RLock()
		gen := k.gen
		k.mu.RUnlock()
		all, err := k.store.Keys(ctx)
		if err != nil {
			return fmt.Errorf("reloading keys: %w", err)
		}
		k.mu.Lock()
		if k.gen != gen {
			// A local Create or Revoke ran while the store was read: the
			// snapshot may miss it, so read again rather than undo it.
			k.mu.Unlock()
			continue
		}
		seen := make(map[string]bool, len(all))
		for _, s := range all {
			seen[s.ID] = true
			if e := k.keys[s.ID]; e != nil {
				if e.Hash == s.Hash {
					continue
				}
				close(e.revoked)
			}
			k.keys[s.ID] = newEntry(s)
		}
		for id, e := range k.keys {
			if !seen[id] {
				delete(k.keys, id)
				close(e.revoked)
			}
		}
		k.mu.Unlock()
		return nil
	}
}
