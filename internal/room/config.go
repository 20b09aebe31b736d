package room

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"
)

// Defaults applied by [DecodeConfig] to fields a room's config leaves out.
const (
	DefaultSessionTTL  = 10 * time.Minute
	DefaultGrace       = 60 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
)

// Bounds on a config, so that a typo cannot create a room that overflows a counter or a timer.
const (
	MaxCapacity = 1_000_000_000
	MaxDuration = 366 * 24 * time.Hour
	// MaxIDLen bounds a room id, which visitor tokens and Redis keys embed.
	MaxIDLen = 64
)

// The window of instants a config may name, for rooms, drops and auctions alike. Anything outside is a
// typo, and far beyond it lies 2262, where Unix nanoseconds wrap: with every time before MaxTime and
// every duration at most MaxDuration, no sum the backends compute can wrap.
var (
	MinTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// TimeInRange reports whether t lies in [MinTime, MaxTime).
func TimeInRange(t time.Time) bool { return !t.Before(MinTime) && t.Before(MaxTime) }

// TimeRangeReason is what a config error says of a time outside [MinTime, MaxTime).
const TimeRangeReason = "must be an RFC 3339 time from 2000 to 2199"

// ValidID reports whether id may name a room: 1 to MaxIDLen of A-Z, a-z, 0-9, _ and -. The alphabet is
// URL-, cookie- and Redis-key-safe, so ids embed in paths, tokens and hash tags without escaping.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Duration is a time.Duration that reads and writes itself as a Go duration string ("90s", "10m"), the
// form people type in config files.
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("duration must be a string such as \"90s\" or \"10m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q", s)
	}
	*d = Duration(v)
	return nil
}

// Rate limits how many visitors a room admits in any window of length Per. It is enforced as a sliding
// window, so no interval of that length ever sees more than Admits admissions, wherever it starts.
type Rate struct {
	Admits int      `json:"admits"`
	Per    Duration `json:"per"`
}

// Config is the operator's description of a room. Capacity and Rate may be combined; at least one of
// them must limit admission, or the room would be a queue that lets everybody straight through.
type Config struct {
	// Capacity is the most visitors admitted at once; 0 means no limit.
	Capacity int `json:"capacity"`
	// Rate, when set, caps new admissions per interval.
	Rate *Rate `json:"rate,omitempty"`
	// SessionTTL is how long an admission lasts once collected.
	SessionTTL Duration `json:"session_ttl"`
	// Grace is how long an admitted visitor has to collect the admission before the slot goes to the
	// next in line.
	Grace Duration `json:"grace"`
	// IdleTimeout is how long a waiting visitor may go without polling or streaming before leaving the line.
	IdleTimeout Duration `json:"idle_timeout"`
	// OpensAt, when set, holds admission until then; everyone who arrived before it is put in a random
	// order, so that arriving early by a millisecond gives no advantage.
	OpensAt *time.Time `json:"opens_at,omitempty"`
	// Paused rooms keep their line but admit nobody.
	Paused bool `json:"paused"`
	// SiteURL is the protected site. The waiting-room page sends admitted visitors there, or to a
	// return_to URL on the same origin, never elsewhere, so that a crafted link cannot carry an
	// admission token off to another site.
	SiteURL string `json:"site_url,omitempty"`
}

// ConfigError explains why a config was refused, naming the field so a client can point at it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "room config: " + e.Reason
	}
	return "room config: " + e.Field + ": " + e.Reason
}

// DecodeConfig reads a config from JSON, refusing unknown fields and trailing data, fills in defaults and
// validates the result. Every refusal is a *ConfigError.
func DecodeConfig(r io.Reader) (Config, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, &ConfigError{Reason: jsonReason(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, &ConfigError{Reason: "unexpected data after the JSON object"}
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// DecodeConfigBytes is [DecodeConfig] over a byte slice.
func DecodeConfigBytes(b []byte) (Config, error) { return DecodeConfig(bytes.NewReader(b)) }

func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be of type %s", typ.Field, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty body"
	default:
		return err.Error()
	}
}

func (c *Config) applyDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = Duration(DefaultSessionTTL)
	}
	if c.Grace == 0 {
		c.Grace = Duration(DefaultGrace)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = Duration(DefaultIdleTimeout)
	}
	if c.OpensAt != nil {
		t := c.OpensAt.UTC().Truncate(time.Millisecond)
		c.OpensAt = &t
	}
}

// Validate reports the first problem with c, as a *ConfigError.
func (c Config) Validate() error {
	switch {
	case c.Capacity < 0 || c.Capacity > MaxCapacity:
		return &ConfigError{"capacity", fmt.Sprintf("must be between 0 and %d", MaxCapacity)}
	case c.Capacity == 0 && c.Rate == nil:
		return &ConfigError{"", "set capacity, rate or both: a room with neither admits everybody at once"}
	}
	if c.Rate != nil {
		if c.Rate.Admits < 1 || c.Rate.Admits > MaxCapacity {
			return &ConfigError{"rate.admits", fmt.Sprintf("must be between 1 and %d", MaxCapacity)}
		}
		if err := checkDuration("rate.per", c.Rate.Per); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"session_ttl", c.SessionTTL}, {"grace", c.Grace}, {"idle_timeout", c.IdleTimeout}} {
		if err := checkDuration(f.name, f.d); err != nil {
			return err
		}
	}
	if c.OpensAt != nil && !TimeInRange(*c.OpensAt) {
		return &ConfigError{"opens_at", TimeRangeReason}
	}
	if c.SiteURL != "" {
		u, err := url.Parse(c.SiteURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(c.SiteURL) > 2048 {
			return &ConfigError{"site_url", "must be an absolute http or https URL"}
		}
	}
	return nil
}

// Target returns where the waiting-room page sends an admitted visitor: returnTo when it is on the
// site's origin, else the site itself; "" when the room names no site.
func (c Config) Target(returnTo string) string {
	site, err := url.Parse(c.SiteURL)
	if c.SiteURL == "" || err != nil {
		return ""
	}
	if r, err := url.Parse(returnTo); err == nil && returnTo != "" && r.Scheme == site.Scheme && r.Host == site.Host && r.User == nil {
		return r.String()
	}
	return site.String()
}

func checkDuration(name string, d Duration) error {
	if time.Duration(d) < time.Millisecond || time.Duration(d) > MaxDuration {
		return &ConfigError{name, "must be between 1ms and " + MaxDuration.String()}
	}
	return nil
}
