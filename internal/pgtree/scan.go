// The scanner's tokens, read directly from pg_query's scanner.

package pgtree

import (
	"errors"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// Token is one token of pg_query's scanner: its byte range and kind.
type Token struct {
	Start, End int32
	Kind       pg.Token
}

// ScanTokens runs pg_query's scanner, like pg.Scan, and appends the tokens to buf.
// It reads the scanner's protobuf output directly: pg.Scan builds a message per
// token, which costs as much as the scan itself, and the hot path that decides a
// statement by its shape only needs the kinds and the ranges.
func ScanTokens(text string, buf []Token) ([]Token, error) {
	out, err := pgquery.ScanToProtobuf(text)
	if err != nil {
		return nil, err
	}
	for len(out) > 0 {
		num, typ, n := protowire.ConsumeTag(out)
		if n < 0 {
			return nil, errMalformed
		}
		out = out[n:]
		if num != 2 || typ != protowire.BytesType { // ScanResult.tokens
			if n = protowire.ConsumeFieldValue(num, typ, out); n < 0 {
				return nil, errMalformed
			}
			out = out[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(out)
		if n < 0 {
			return nil, errMalformed
		}
		out = out[n:]
		var t Token
		for len(msg) > 0 {
			num, typ, n := protowire.ConsumeTag(msg)
			if n < 0 {
				return nil, errMalformed
			}
			msg = msg[n:]
			if typ != protowire.VarintType {
				if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
					return nil, errMalformed
				}
				msg = msg[n:]
				continue
			}
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return nil, errMalformed
			}
			msg = msg[n:]
			switch num { // ScanToken: start, end, token
			case 1:
				t.Start = int32(v)
			case 2:
				t.End = int32(v)
			case 4:
				t.Kind = pg.Token(v)
			}
		}
		if t.Start < 0 || t.End < t.Start || int(t.End) > len(text) {
			return nil, errMalformed
		}
		buf = append(buf, t)
	}
	return buf, nil
}

var errMalformed = errors.New("pg_query's scanner output does not decode")
