// The comparison of a re-parsed text with an intended tree, by their encodings.

package pgtree

import (
	"bytes"
	"errors"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ParseMatches parses text, held to limit like Parse, and reports whether its tree is
// want apart from positions: the check of every rewrite. It compares encodings
// rather than trees: the parser's protobuf output as it comes, against want encoded
// by the Go runtime, field by field, skipping positions. Building a Go tree from the
// output and walking both by reflection cost several times as much.
//
// Equal encodings decode to equal trees, so a match is a match. Both encoders write
// fields in number order and leave out the default values of proto3, so equal trees
// encode alike; were they ever to differ, the rewrite would be refused, never sent.
func ParseMatches(want *pg.ParseResult, text string, limit int) (bool, error) {
	got, err := parseEncoded(text, limit)
	if err != nil {
		return false, err
	}
	enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		return false, err
	}
	return sameEncoding(enc, got, want.ProtoReflect().Descriptor())
}

var errEncoding = errors.New("a tree's encoding does not decode")

// sameEncoding compares two encodings of messages of type desc, positions left out.
func sameEncoding(a, b []byte, desc protoreflect.MessageDescriptor) (bool, error) {
	fields := fieldsOf(desc)
	for {
		var err error
		if a, err = skipPositions(a, fields); err != nil {
			return false, err
		}
		if b, err = skipPositions(b, fields); err != nil {
			return false, err
		}
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b), nil
		}
		numA, typA, n := protowire.ConsumeTag(a)
		numB, typB, m := protowire.ConsumeTag(b)
		if n < 0 || m < 0 {
			return false, errEncoding
		}
		if numA != numB || typA != typB {
			return false, nil
		}
		a, b = a[n:], b[m:]
		n = protowire.ConsumeFieldValue(numA, typA, a)
		m = protowire.ConsumeFieldValue(numB, typB, b)
		if n < 0 || m < 0 {
			return false, errEncoding
		}
		if sub := fields.message(numA); sub != nil && typA == protowire.BytesType {
			va, _ := protowire.ConsumeBytes(a)
			vb, _ := protowire.ConsumeBytes(b)
			if same, err := sameEncoding(va, vb, sub); !same || err != nil {
				return false, err
			}
		} else if !bytes.Equal(a[:n], b[:m]) {
			return false, nil
		}
		a, b = a[n:], b[m:]
	}
}

// skipPositions drops the position fields at the start of an encoding.
func skipPositions(enc []byte, fields *messageFields) ([]byte, error) {
	for len(enc) > 0 {
		num, typ, n := protowire.ConsumeTag(enc)
		if n < 0 {
			return nil, errEncoding
		}
		if !fields.position(num) {
			return enc, nil
		}
		m := protowire.ConsumeFieldValue(num, typ, enc[n:])
		if m < 0 {
			return nil, errEncoding
		}
		enc = enc[n+m:]
	}
	return enc, nil
}

func (f *messageFields) position(num protowire.Number) bool {
	return int(num) < len(f.positions) && f.positions[num]
}

func (f *messageFields) message(num protowire.Number) protoreflect.MessageDescriptor {
	if int(num) < len(f.messages) {
		return f.messages[num]
	}
	return nil
}
