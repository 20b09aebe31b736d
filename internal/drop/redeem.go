package drop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rushgate/rushgate"
)

// MaxOrderLen bounds the order a redemption names: a checkout's order number or id. The API refuses
// a longer one.
const MaxOrderLen = 200

// The outcomes of a redemption an [Observer] hears of.
const (
	// OutcomeRedeemed is a code redeemed, the first time (a same-order repeat is not counted again).
	OutcomeRedeemed = "redeemed"
	// OutcomeRefused is a redemption of a code used already by another order or none: a code
	// presented twice, which an operator watches for.
	OutcomeRefused = "refused"
	// OutcomeReturned is a redemption handed back by its order (cancelled), the code usable again.
	OutcomeReturned = "returned"
)

// Observer hears of redemptions, for the metrics.
type Observer interface {
	Redemption(drop, outcome string)
}

// ErrRedeemed refuses a redemption of a code used already; the error is a [*RedeemedError], which
// says when and for which order.
var ErrRedeemed = errors.New("drop: code already redeemed")

// Redemption is a claim's code used at a checkout: once, at At, for Order ("" when the checkout named
// none).
type Redemption struct {
	At    time.Time `json:"redeemed_at"`
	Order string    `json:"order,omitempty"`
}

// RedeemedError refuses a redemption of a code used already: Redemption is the one that stands.
type RedeemedError struct{ Redemption Redemption }

func (e *RedeemedError) Error() string { return ErrRedeemed.Error() }

// Unwrap makes errors.Is(err, ErrRedeemed) hold.
func (e *RedeemedError) Unwrap() error { return ErrRedeemed }

// Redemptions keeps which codes of a drop were used, each once. It must be one for every instance
// that serves the drop and as durable as the claims it answers for: the SQL record is one, whose own
// statement makes a redemption exactly-once. It keeps codes, not claim numbers: a claim numbered
// again after Redis came back behind the record (see the record's conflicts) is not taken for used.
type Redemptions interface {
	// Redeem records r for a code of a drop unless the code has a redemption already, and returns the
	// redemption that stands, with whether it is r.
	Redeem(ctx context.Context, id, code string, r Redemption) (Redemption, bool, error)
	// Redeemed returns a code's redemption, false when it is unused.
	Redeemed(ctx context.Context, id, code string) (Redemption, bool, error)
	// RedeemedAmong returns the redemptions of those of codes that were used.
	RedeemedAmong(ctx context.Context, id string, codes []string) (map[string]Redemption, error)
	// Unredeem removes a code's redemption if it is order's, and says whether there was one to remove.
	Unredeem(ctx context.Context, id, code, order string) (bool, error)
	// CountRedeemed returns how many codes of a drop were used.
	CountRedeemed(ctx context.Context, id string) (int, error)
}

// Code is the claim that handed out a code, with its redemption once the code is used.
type Code struct {
	Claim
	*Redemption
}

// CodeOf returns the claim that handed out code (as [Service.ClaimOf]) and its redemption, if any.
func (s *Service) CodeOf(ctx context.Context, id, code string) (Code, error) {
	c, err := s.ClaimOf(ctx, id, code)
	if err != nil || s.redemptions == nil {
		return Code{Claim: c}, err
	}
	r, used, err := s.redemptions.Redeemed(ctx, id, c.Code)
	if err != nil || !used {
		return Code{Claim: c}, err
	}
	return Code{Claim: c, Redemption: &r}, nil
}

// ClaimCodes returns up to limit claims after claim number after, in order (as [Service.Claims]), each
// with its code's redemption: what an export of the claims lists.
func (s *Service) ClaimCodes(ctx context.Context, id string, after int64, limit int) ([]Code, error) {
	claims, err := s.store.Claims(ctx, id, after, limit)
	if err != nil {
		return nil, err
	}
	return s.withRedemptions(ctx, id, claims)
}

// withRedemptions pairs claims with their codes' redemptions, in one read of the record.
func (s *Service) withRedemptions(ctx context.Context, id string, claims []Claim) ([]Code, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	var used map[string]Redemption
	var err error
	if s.redemptions != nil {
		codes := make([]string, len(claims))
		for i, c := range claims {
			codes[i] = c.Code
		}
		if used, err = s.redemptions.RedeemedAmong(ctx, id, codes); err != nil {
			return nil, err
		}
	}
	out := make([]Code, len(claims))
	for i, c := range claims {
		out[i].Claim = c
		if r, ok := used[c.Code]; ok {
			out[i].Redemption = &r
		}
	}
	return out, nil
}

// Held returns a visitor's claims of a drop, each with its code's redemption: what the visitor's page
// shows of the codes it holds, the used ones marked.
// While the record fails, the codes come without it: a visitor's codes matter more than their marks.
func (s *Service) Held(ctx context.Context, id, visitor string) ([]Code, error) {
	claims, err := s.store.Mine(ctx, id, visitor)
	if err != nil {
		return nil, err
	}
	codes, err := s.withRedemptions(ctx, id, claims)
	if err != nil {
		s.log.WarnContext(ctx, "a visitor's codes shown without their redemptions: the record fails", "drop", id, "err", err)
		codes = make([]Code, len(claims))
		for i, c := range claims {
			codes[i].Claim = c
		}
	}
	return codes, nil
}

// Redeem marks code used, for order: a checkout's "use this coupon", exactly once whatever the number
// of instances and checkouts asking. The first redemption stands. A repeat naming the same order
// answers it again, so that a checkout may retry a call whose answer it lost; any other is refused with
// a [*RedeemedError]. ErrNoSuchCode as [Service.ClaimOf].
func (s *Service) Redeem(ctx context.Context, id, code, order string) (Code, error) {
	c, err := s.redeemable(ctx, id, code)
	if err != nil {
		return Code{}, err
	}
	// To the millisecond, as every other time the API tells (a claim's claimed_at, an event's at).
	r, mine, err := s.redemptions.Redeem(ctx, id, c.Code, Redemption{At: s.clock().UTC().Truncate(time.Millisecond), Order: order})
	if err != nil {
		return Code{}, err
	}
	if !mine && (order == "" || r.Order != order) {
		s.observe(id, OutcomeRefused)
		return Code{Claim: c, Redemption: &r}, &RedeemedError{Redemption: r}
	}
	if mine {
		s.observe(id, OutcomeRedeemed)
	}
	return Code{Claim: c, Redemption: &r}, nil
}

// Unredeem makes a code usable again when the order it was redeemed for is cancelled: the redemption
// goes if it is order's ("" for one that named none), and a code not redeemed is left as it is. A
// redemption of another order stays, refused with a [*RedeemedError], so that one checkout cannot
// hand back a code another one used.
func (s *Service) Unredeem(ctx context.Context, id, code, order string) (Code, error) {
	c, err := s.redeemable(ctx, id, code)
	if err != nil {
		return Code{}, err
	}
	removed, err := s.redemptions.Unredeem(ctx, id, c.Code, order)
	if err != nil {
		return Code{}, err
	}
	if removed {
		s.observe(id, OutcomeReturned)
		return Code{Claim: c}, nil
	}
	r, stays, err := s.redemptions.Redeemed(ctx, id, c.Code) // another order's, if any
	if err != nil {
		return Code{}, err
	}
	if stays {
		return Code{Claim: c, Redemption: &r}, &RedeemedError{Redemption: r}
	}
	return Code{Claim: c}, nil
}

// redeemable returns the claim of a code whose redemption is to change.
func (s *Service) redeemable(ctx context.Context, id, code string) (Claim, error) {
	if s.redemptions == nil {
		return Claim{}, fmt.Errorf("%w: redeeming codes needs the SQL record", rushgate.ErrRecordUnavailable)
	}
	return s.ClaimOf(ctx, id, code)
}

func (s *Service) observe(id, outcome string) {
	if s.observer != nil {
		s.observer.Redemption(id, outcome)
	}
}
