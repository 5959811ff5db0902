package dashboard

import (
	"context"
	"time"
)

// ClusterMember is a node of the cluster as the dashboard shows it.
type ClusterMember struct {
	ID, URL string
	Leader  bool
}

// ClusterView is what GET /v1/cluster serves: this node, the leader (nil
// when there is none) and every running node.
type ClusterView struct {
	Self    ClusterMember
	Leader  *ClusterMember
	Members []ClusterMember
}

// clusterView asks Handler.Cluster, briefly: the page still renders when
// etcd is slow, saying the cluster's state is unknown.
func (h *Handler) clusterView(ctx context.Context) *ClusterView {
	if h.Cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := h.Cluster(ctx)
	if err != nil {
		h.Logger.Warn("dashboard: reading the cluster's members", "err", err)
		return &ClusterView{}
	}
	return &v
}
