package keyring

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rushgate/rushgate/admission"
	"github.com/rushgate/rushgate/internal/vault"
)

func TestPersistAndRotate(t *testing.T) {
	dir := vault.Dir(t.TempDir())
	ctx := context.Background()
	kr, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := admission.Claims{Room: "r", RegisteredClaims: jwt.RegisteredClaims{
		Subject: "v_a", ID: "x.1", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute)),
	}}
	tok, err := kr.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, dir) // a restart
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admission.NewVerifier(again.PublicKeys()).Verify(context.Background(), tok, "r"); err != nil {
		t.Fatalf("token signed before restart: %v", err)
	}
	if err := again.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	set := again.KeySet()
	data, _ := json.Marshal(set)
	keys, err := admission.ParseKeySet(data)
	if err != nil || len(keys) != 2 {
		t.Fatalf("after rotation %d keys, %v", len(keys), err)
	}
	v := admission.NewVerifier(keys)
	if _, err := v.Verify(context.Background(), tok, "r"); err != nil {
		t.Fatalf("old token after rotation: %v", err)
	}
	tok2, _ := again.Sign(c)
	if _, err := v.Verify(context.Background(), tok2, "r"); err != nil {
		t.Fatal(err)
	}
	_ = again.Rotate(ctx)
	_ = again.Rotate(ctx)
	if _, err := admission.NewVerifier(again.PublicKeys()).Verify(context.Background(), tok, "r"); err == nil {
		t.Fatal("a key two rotations old still verifies")
	}
}
