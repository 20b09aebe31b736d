package httpapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/vault"
	"github.com/rushgate/rushgate/internal/visitor"
)

// BenchmarkJoinHandler measures the join handler itself, without the network, next to the null handler
// as the same-run baseline.
func BenchmarkJoinHandler(b *testing.B) {
	keys, _ := keyring.Open(context.Background(), vault.Dir(b.TempDir()), keyring.Options{})
	issuer, _ := visitor.NewIssuer(bytes.Repeat([]byte("s"), 32))
	m := metrics.New()
	log := slog.New(slog.DiscardHandler)
	svc := room.NewService(memstore.NewRooms(memstore.Options{}), room.Options{Observer: m, Logger: log})
	defer svc.Stop()
	m.WatchRooms(svc)
	api, err := httpapi.New(httpapi.Config{Rooms: svc, Keys: keys, Visitors: issuer, Metrics: m, Logger: log, AdminKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	h := api.Handler()
	req := httptest.NewRequest("PUT", "/v1/rooms/bench", bytes.NewReader([]byte(`{"capacity": 10, "idle_timeout": "1h"}`)))
	req.Header.Set("Authorization", "Bearer k")
	h.ServeHTTP(httptest.NewRecorder(), req)
	null := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"waiting"}`))
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"null", null}, {"join", h}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				bc.h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/rooms/bench/join", nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
