package cluster

import "context"

// Status is the cluster as one node sees it: what GET /v1/cluster serves
// and the dashboard shows.
type Status struct {
	Self    Member   `json:"self"`
	Leader  *Member  `json:"leader"` // nil when there is none
	Members []Member `json:"members"`
}

// Status reads the running members from etcd; the leader is the one this
// node follows.
func (n *Node) Status(ctx context.Context) (Status, error) {
	members, err := n.Members(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Self: n.self, Members: members}
	st.Self.Role = "follower"
	if l := n.leader.Load(); l != nil {
		st.Leader = &Member{ID: l.ID, URL: l.URL}
		if l.ID == st.Self.ID {
			st.Self.Role = "leader"
		}
	}
	return st, nil
}
