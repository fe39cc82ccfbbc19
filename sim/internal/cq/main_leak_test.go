package cq_test

import (
	"testing"

	"github.com/verbsim/verbsim/internal/leakcheck"
)

// TestMain fails the package's tests if they leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
