// Package dsnparam reads sqlfence's own parameters out of a DSN, for both fronts:
// the registered database/sql driver (sql.Open("sqlfence", dsn)) and pgxfence.Open.
// They are removed before pgx sees the DSN, since pgx sends every parameter it does
// not know to the server as a setting, which the server refuses ("unrecognized
// configuration parameter"). A parameter that looks like sqlfence's but is not one
// is an error with the name it was probably meant to be: a misspelt sqlfence_policy
// must not read as "no policy given".
package dsnparam

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Policy is the DSN parameter that names the policy file.
const Policy = "sqlfence_policy"

// Known are the parameters starting with "sqlfence" that a DSN may carry: the
// policy, which Split removes, and the guard's session setting, which pgx sends to
// the server as it is.
var Known = []string{Policy, "sqlfence.fenced"}

// Split removes the policy parameter from a DSN, in URL or keyword/value
// form, so pgx never sees a parameter it would send to the server as a setting.
func Split(dsn string) (path, rest string, err error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // url.Error quotes the whole URL, password and all
			}
			return "", "", fmt.Errorf("sqlfence: bad DSN: %w", err)
		}
		// The other parameters are kept byte for byte: pgx reads them as libpq does,
		// where '+' is a plus sign, so re-encoding them (url.Values.Encode writes a
		// space as '+') would turn options=-c%20a=b into "-c+a=b".
		var kept []string
		found := false
		for pair := range strings.SplitSeq(u.RawQuery, "&") {
			rawKey, rawValue, _ := strings.Cut(pair, "=")
			key, kerr := url.QueryUnescape(rawKey)
			if kerr == nil {
				if err := checkKey(key); err != nil {
					return "", "", err
				}
			}
			if kerr == nil && key == Policy {
				found = true
				if path, err = url.QueryUnescape(rawValue); err != nil {
					return "", "", fmt.Errorf("sqlfence: bad DSN: %s: %w", Policy, err)
				}
				continue
			}
			kept = append(kept, pair)
		}
		if !found {
			return "", dsn, nil
		}
		u.RawQuery = strings.Join(kept, "&")
		return path, u.String(), nil
	}
	// keyword=value pairs separated by spaces; values may be single-quoted with \' and \\.
	var kept []string
	for i := 0; i < len(dsn); {
		for i < len(dsn) && dsn[i] == ' ' {
			i++
		}
		start := i
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			if strings.TrimSpace(dsn[i:]) != "" {
				kept = append(kept, dsn[i:])
			}
			break
		}
		if sp := strings.IndexByte(dsn[i:], ' '); sp >= 0 && sp < eq && strings.TrimSpace(dsn[i+sp:i+eq]) != "" {
			// A word without a value: the name stdlib.RegisterConnConfig returned,
			// followed by sqlfence_policy=PATH. Kept as it is.
			kept = append(kept, dsn[i:i+sp])
			i += sp
			continue
		}
		key := strings.TrimSpace(dsn[i : i+eq])
		if strings.ContainsAny(key, "/:?&@") {
			// A URL with a typo (postgres//host, postgres:/host) would otherwise read as
			// one odd keyword, and the policy parameter inside it would go unseen. The
			// text is not quoted back: it may hold a password.
			return "", "", errors.New("sqlfence: bad DSN: it is neither a postgres:// URL nor keyword=value pairs; " +
				"write postgres://user:password@host/db?" + Policy + "=PATH or host=HOST dbname=DB " + Policy + "=PATH")
		}
		if err := checkKey(key); err != nil {
			return "", "", err
		}
		i += eq + 1
		for i < len(dsn) && dsn[i] == ' ' {
			i++
		}
		var val strings.Builder
		if i < len(dsn) && dsn[i] == '\'' {
			i++
			for i < len(dsn) && dsn[i] != '\'' {
				if dsn[i] == '\\' && i+1 < len(dsn) {
					i++
				}
				val.WriteByte(dsn[i])
				i++
			}
			if i >= len(dsn) {
				return "", "", errors.New("sqlfence: bad DSN: unterminated quoted value for " + key)
			}
			i++
		} else {
			for i < len(dsn) && dsn[i] != ' ' {
				val.WriteByte(dsn[i])
				i++
			}
		}
		if key == Policy {
			path = val.String()
			continue
		}
		kept = append(kept, dsn[start:i])
	}
	return path, strings.Join(kept, " "), nil
}

// checkKey refuses a key that looks like one of sqlfence's parameters but is none.
func checkKey(key string) error {
	lower := strings.ToLower(key)
	for _, k := range Known {
		if key == k {
			return nil
		}
	}
	near := ""
	for _, k := range Known {
		if sqlident.Distance(lower, k) <= 3 {
			near = k
			break
		}
	}
	if near == "" && !strings.HasPrefix(lower, "sqlfence") {
		return nil
	}
	if near == "" {
		near = Policy
	}
	return fmt.Errorf("sqlfence: unknown DSN parameter %q (did you mean %s?); sqlfence reads only %s=PATH from the DSN, and pgx would send any other to the server as a setting",
		key, near, Policy)
}
