package httpapi

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"time"
)

// exportPage is how many rows an export reads from the store at a time.
const exportPage = 1000

// exportRows are one read of an export's rows, and the sequence number to read the next after.
type exportRows struct {
	rows [][]string
	last int64
}

// exportCSV streams a CSV attachment of every row that next reads, page after page, until a page
// comes back empty. The first page is read before anything is written, so that an unknown id or a
// store that does not answer is the API's JSON error. A failure after that aborts the response: the
// download then fails in the browser rather than ending short, which would look like the whole list.
func (s *Server) exportCSV(w http.ResponseWriter, r *http.Request, filename string, header []string,
	next func(ctx context.Context, after int64) (exportRows, error)) {
	p, err := next(r.Context(), 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	attachment(w.Header(), "text/csv; charset=utf-8", filename)
	out := csv.NewWriter(w)
	_ = out.Write(header)
	for len(p.rows) > 0 {
		for _, row := range p.rows {
			for i, cell := range row {
				row[i] = inert(cell)
			}
			_ = out.Write(row)
		}
		out.Flush()
		if out.Error() != nil || r.Context().Err() != nil {
			return // the client has gone
		}
		if len(p.rows) < exportPage {
			break // a short read was the last
		}
		if p, err = next(r.Context(), p.last); err != nil {
			s.log.Warn("export: a page failed; the download is cut", "path", r.URL.Path, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	out.Flush()
}

// attachment sets the headers of a download: saved as filename, never cached (it holds the operator's
// data), never sniffed as another type.
func attachment(h http.Header, contentType, filename string) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// inert keeps a cell from being read as a formula by a spreadsheet: a listed code is the operator's
// text, and one that starts with "=", "+", "-" or "@" would otherwise run as one when the export is
// opened (OWASP's "CSV injection"). Such a cell gets a leading apostrophe.
func inert(cell string) string {
	if cell != "" && (cell[0] == '=' || cell[0] == '+' || cell[0] == '-' || cell[0] == '@' || cell[0] == '\t' || cell[0] == '\r') {
		return "'" + cell
	}
	return cell
}

// exportClaims answers GET /v1/drops/{drop}/claims.csv: every claim of the drop, in order, for the
// operator's fulfilment.
func (s *Server) exportClaims(w http.ResponseWriter, r *http.Request) {
	id, err := dropID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.exportCSV(w, r, "drop-"+id+"-claims.csv", []string{"seq", "claim_id", "code", "visitor", "claimed_at", "redeemed_at", "order"},
		func(ctx context.Context, after int64) (exportRows, error) {
			claims, err := s.drops.ClaimCodes(ctx, id, after, exportPage)
			p := exportRows{last: after}
			for _, c := range claims {
				row := []string{strconv.FormatInt(c.Seq, 10), c.ID, c.Code, c.Visitor, c.ClaimedAt.UTC().Format(time.RFC3339Nano), "", ""}
				if c.Redemption != nil {
					row[5], row[6] = c.Redemption.At.UTC().Format(time.RFC3339Nano), c.Redemption.Order
				}
				p.rows = append(p.rows, row)
				p.last = c.Seq
			}
			return p, err
		})
}

// exportEvents answers GET /v1/auctions/{auction}/events.csv: every event of the auction, in order
// (each bid, automatic ones marked, each extension, the close or the sale), for settling a dispute.
func (s *Server) exportEvents(w http.ResponseWriter, r *http.Request) {
	id, err := auctionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.exportCSV(w, r, "auction-"+id+"-events.csv", []string{"seq", "at", "kind", "bidder", "price", "automatic", "ends_at"},
		func(ctx context.Context, after int64) (exportRows, error) {
			evs, err := s.auctions.Events(ctx, id, after, exportPage)
			p := exportRows{last: after}
			for _, e := range evs {
				p.rows = append(p.rows, []string{strconv.FormatInt(e.Seq, 10), e.At.UTC().Format(time.RFC3339Nano), e.Kind, e.Bidder,
					strconv.FormatInt(e.Price, 10), strconv.FormatBool(e.Proxy), e.EndsAt.UTC().Format(time.RFC3339Nano)})
				p.last = e.Seq
			}
			return p, err
		})
}
