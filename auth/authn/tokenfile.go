package authn

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// TokenAuthenticator recognizes a bearer token: the user and true, false
// with a nil error when it does not know the token, or an error.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (user.Info, bool, error)
}

// TokenFile holds the static tokens of kube-apiserver's --token-auth-file.
// It is read once; kube-apiserver does not reload the file either.
type TokenFile struct {
	// tokens maps a token to its user. Read-only after parsing.
	tokens map[string]*user.DefaultInfo
	// Warnings lists the lines that were skipped (an empty token) or that
	// replaced an earlier line (a duplicate token), for the daemon to log.
	// They never contain a token.
	Warnings []string
}

// LoadTokenFile reads path with ParseTokenFile.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open token file: %w", err)
	}
	defer f.Close()
	return ParseTokenFile(f, path)
}

// ParseTokenFile parses kube-apiserver's token file format, a CSV file with
// one record a line:
//
//	token,user,uid,"group1,group2"
//
// with the rules of kube-apiserver's reader:
//   - standard CSV quoting (encoding/csv); blank lines are skipped; there are
//     no comments, and spaces are part of the values;
//   - a record needs at least 3 columns, else the whole file is refused;
//     columns after the 4th are ignored;
//   - the 4th column is split at every comma into groups, so an empty 4th
//     column is one empty group name;
//   - a record with an empty token is skipped with a warning;
//   - a token that appears again replaces the earlier record, with a warning.
//
// A CSV syntax error refuses the whole file. name is used in errors and
// warnings.
func ParseTokenFile(r io.Reader, name string) (*TokenFile, error) {
	tf := &TokenFile{tokens: make(map[string]*user.DefaultInfo)}
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	for recordNum := 1; ; recordNum++ {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse token file %s: %w", name, err)
		}
		line, _ := reader.FieldPos(0)
		if len(record) < 3 {
			return nil, fmt.Errorf("parse token file %s: line %d: want at least 3 columns (token, user name, user uid), found %d", name, line, len(record))
		}
		if record[0] == "" {
			tf.Warnings = append(tf.Warnings, fmt.Sprintf("token file %s: line %d (record %d): empty token, record skipped", name, line, recordNum))
			continue
		}
		u := &user.DefaultInfo{Name: record[1], UID: record[2]}
		if len(record) >= 4 {
			u.Groups = strings.Split(record[3], ",")
		}
		if _, dup := tf.tokens[record[0]]; dup {
			tf.Warnings = append(tf.Warnings, fmt.Sprintf("token file %s: line %d (record %d): duplicate token, replaces the earlier record", name, line, recordNum))
		}
		tf.tokens[record[0]] = u
	}
	return tf, nil
}

// Len returns the number of tokens.
func (f *TokenFile) Len() int { return len(f.tokens) }

// AuthenticateToken implements TokenAuthenticator. An unknown token is no
// opinion; BearerToken turns that into an error.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (user.Info, bool, error) {
	u, ok := f.tokens[token]
	if !ok {
		return nil, false, nil
	}
	return u, true, nil
}

// TokenUnion tries token authenticators in order; the first that recognizes
// the token wins, and errors only count when none does.
type TokenUnion []TokenAuthenticator

// AuthenticateToken implements TokenAuthenticator.
func (u TokenUnion) AuthenticateToken(ctx context.Context, token string) (user.Info, bool, error) {
	var errs []error
	for _, a := range u {
		info, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return info, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}
