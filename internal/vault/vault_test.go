package vault_test

import (
	"testing"

	"github.com/rushgate/rushgate/internal/storetest"
	"github.com/rushgate/rushgate/internal/vault"
)

func TestDir(t *testing.T) {
	storetest.RunVault(t, vault.Dir(t.TempDir()))
}
