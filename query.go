package fenceview

import (
	"sort"
	"strings"
)

// Sort orders of a ResourceQuery.
const (
	SortID          = "id"
	SortHWM         = "hwm"
	SortLastToken   = "last"
	SortHolder      = "holder"
	SortAccepted    = "accepted"
	SortRejected    = "rejected"
	SortLastRefused = "lastRejection"
)

// SortKeys are the orders a ResourceQuery may ask for.
var SortKeys = []string{SortID, SortHWM, SortLastToken, SortHolder, SortAccepted, SortRejected, SortLastRefused}

// ResourceQuery selects one page of resources: those whose id starts with
// Prefix, in Sort order (Desc reverses it; ties go by id), after the
// position After, at most Limit.
type ResourceQuery struct {
	Prefix string
	Sort   string
	Desc   bool
	After  *ResourceKey
	Limit  int
	// Scope leaves out resources the reader may not see (a key limited
	// to some prefixes); they are not counted in Matched either.
	Scope Scope
	// Where, when set, keeps only the resources it accepts; it reads the
	// resource in place and must not keep it.
	Where func(*Resource) bool
}

// ResourceKey is a position in a sort order: the sort value of a resource
// (Num for numeric orders, Str for textual ones) and its id.
type ResourceKey struct {
	Num int64
	Str string
	ID  string
}

// ResourcePage is the answer to a ResourceQuery: Next is the position to
// pass as After for the following page, nil on the last; Matched counts
// every resource the prefix matched.
type ResourcePage struct {
	Resources []Resource
	Next      *ResourceKey
	Matched   int
}

// Scope is what a reader may see. Sees, when set, decides each id (nil:
// every id). Prefixes, when not empty, are id prefixes outside of which
// Sees accepts nothing (a key's resource prefixes): readers then walk only
// those ranges of the index, so a key limited to a few prefixes pays for
// what it may see, not for every resource. A prefix missing from the list
// can only hide a resource, never show one Sees refuses.
type Scope struct {
	Prefixes []string
	Sees     func(resourceID string) bool
}

// Contains reports whether the reader may see id.
func (sc Scope) Contains(id string) bool { return sc.Sees == nil || sc.Sees(id) }

// Ranges are the id prefixes a walk for ids starting with prefix covers
// within sc: sorted, none starting with another, so that their ranges of
// an ordered index are disjoint and come in id order.
func (sc Scope) Ranges(prefix string) []string {
	if len(sc.Prefixes) == 0 {
		return []string{prefix}
	}
	var out []string
	for _, p := range sc.Prefixes {
		switch {
		case strings.HasPrefix(prefix, p):
			out = append(out, prefix)
		case strings.HasPrefix(p, prefix):
			out = append(out, p)
		}
	}
	sort.Strings(out)
	kept := out[:0]
	for _, p := range out {
		// Sorted, a prefix comes just before every id that starts with it.
		if len(kept) > 0 && strings.HasPrefix(p, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}
