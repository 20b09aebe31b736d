package admission_test

import (
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rushgate/rushgate/admission"
)

// A protected site puts Gate in front of its handlers. In production the verifier comes from
// NewRemoteVerifier("https://queue.example.com/v1/keys", nil); here a key made on the spot stands in
// for rushgate's.
func ExampleGate() {
	_, key, _ := ed25519.GenerateKey(nil)
	verifier := admission.NewVerifier(map[string]ed25519.PublicKey{"k1": key.Public().(ed25519.PublicKey)})

	shop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := admission.FromContext(r.Context())
		fmt.Fprintf(w, "welcome %s", c.Visitor())
	})
	gate := &admission.Gate{Verifier: verifier, Room: "sale", RoomURL: "https://queue.example.com/r/sale"}
	site := gate.Wrap(shop)

	// Without an admission the visitor is sent to the waiting room.
	rec := httptest.NewRecorder()
	site.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.example.com/checkout", nil))
	fmt.Println(rec.Code, rec.Header().Get("Location"))

	// With one, the request reaches the shop.
	token, _ := admission.Sign("k1", key, admission.Claims{Room: "sale", RegisteredClaims: jwt.RegisteredClaims{
		Subject: "v_123", ID: "a.1", ExpiresAt: jwt.NewNumericDate(time.Now().Add(10 * time.Minute)),
	}})
	req := httptest.NewRequest("GET", "http://shop.example.com/checkout", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec = httptest.NewRecorder()
	site.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 302 https://queue.example.com/r/sale?return_to=http%3A%2F%2Fshop.example.com%2Fcheckout
	// 200 welcome v_123
}
