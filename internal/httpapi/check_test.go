package httpapi_test

import (
	"net/http"
	"testing"
)

// TestCheckKeepsALiveAdmission: nginx's check adopts an admission handed over in the original URL only
// when the visitor holds no live one: a link carrying someone else's must not replace the visitor's
// by navigation alone.
func TestCheckKeepsALiveAdmission(t *testing.T) {
	e := setup(t)
	e.putRoom("sale", `{"capacity": 2}`)
	mine, theirs := e.join("sale", "").str("visitor_token"), e.join("sale", "").str("visitor_token")
	e.tick("sale")
	mineAdm := e.do("GET", "/v1/rooms/sale/status", mine, "").str("admission_token")
	theirsAdm := e.do("GET", "/v1/rooms/sale/status", theirs, "").str("admission_token")
	if mineAdm == "" || theirsAdm == "" {
		t.Fatal("the visitors were not admitted")
	}
	check := func(held string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/sale/check", nil)
		req.Header.Set("X-Original-URL", "https://shop.example/buy?rg_admission="+theirsAdm)
		if held != "" {
			req.AddCookie(&http.Cookie{Name: "rg_admission", Value: held})
		}
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		set := ""
		for _, c := range res.Cookies() {
			if c.Name == "rg_admission" {
				set = c.Value
			}
		}
		return res.StatusCode, set
	}
	if code, set := check(mineAdm); code != 204 || set != "" {
		t.Fatalf("holding a live admission: %d, cookie set to %.12q; want 204 and the cookie kept", code, set)
	}
	if code, set := check(""); code != 204 || set != theirsAdm {
		t.Fatalf("holding none: %d, cookie set to %.12q; want 204 and the handed one adopted", code, set)
	}
	e.want(e.do("POST", "/v1/rooms/sale/release", mine, ""), 200, "")
	if code, set := check(mineAdm); code != 204 || set != theirsAdm {
		t.Fatalf("holding a released admission: %d, cookie set to %.12q; want 204 and the handed one adopted", code, set)
	}
}

// TestCheckLooksPastTheSitesBearer: nginx's check passes a visitor admitted by cookie whose request
// carries the site's own bearer token, rather than sending them back to the room.
func TestCheckLooksPastTheSitesBearer(t *testing.T) {
	e := setup(t)
	_, adm := e.admitOne("sale", `{"capacity": 1}`)
	for _, c := range []struct {
		bearer, cookie string
		code           int
	}{{"site-session.abc", adm, 204}, {adm, "", 204}, {"site-session.abc", "", 401}} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/sale/check", nil)
		req.Header.Set("Authorization", "Bearer "+c.bearer)
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: "rg_admission", Value: c.cookie})
		}
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.code {
			t.Errorf("bearer %.12q, cookie %.12q: %d, want %d", c.bearer, c.cookie, res.StatusCode, c.code)
		}
	}
}
