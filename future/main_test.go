package future_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/crisprt/crisp/internal/crisptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(crisptest.CountsReady(m)) }
