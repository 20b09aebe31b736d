// Package captcha checks CAPTCHA answers with the siteverify protocol that Cloudflare Turnstile,
// hCaptcha and reCAPTCHA share: the server posts its secret, the browser's response token and the
// client's address to the service, which answers {"success": true|false, ...}.
package captcha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrUnavailable means the service could not be asked; the join may be retried.
var ErrUnavailable = errors.New("captcha: the verification service did not answer")

// Verifier asks one siteverify service.
type Verifier struct {
	url    string
	secret string
	client *http.Client
}

// New returns a verifier of verifyURL with the site's secret; a nil client means one with a 5 s timeout.
func New(verifyURL, secret string, client *http.Client) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &Verifier{url: verifyURL, secret: secret, client: client}
}

// Verify reports whether response is a valid answer given from remoteIP.
func (v *Verifier) Verify(ctx context.Context, response, remoteIP string) (bool, error) {
	if response == "" || len(response) > 4096 {
		return false, nil
	}
	form := url.Values{"secret": {v.secret}, "response": {response}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.url, strings.NewReader(form.Encode()))
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := v.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%w: HTTP %d", ErrUnavailable, res.StatusCode)
	}
	var out struct {
		Success bool `json:"success"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&out); err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return out.Success, nil
}
