package guardtest_test

import (
	"testing"

	"github.com/fenceview/fenceview/internal/guardtest"
)

// The in-process guard is the reference: the table is right about it.
func TestMemory(t *testing.T) {
	guardtest.Run(t, func(*testing.T) guardtest.Resource { return guardtest.Memory() })
}
