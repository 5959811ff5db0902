//go:build fenceview_unsafe_synchronous_normal

package sqlite

// Built with this tag, fenceview commits with synchronous=NORMAL: a grant
// is answered before its WAL frames are fsynced, and a power cut loses it.
// It is never a release build: the power-cut harness builds it
// (TestPowerCutHarnessCatchesSynchronousNormal in cmd/fenceview) to show
// that it catches exactly that loss, which a SIGKILL cannot show.
func init() { synchronous = "NORMAL" }
