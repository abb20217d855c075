package nodeproto

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// A run's nodes prove they belong to it with the run's secret, which the
// coordinator generates (or is given, for nodes others start) and gives
// each node out of band: in its environment (SecretEnv), or in a file.
// The secret itself never crosses the link:
//
//   - the link is TLS 1.3; the coordinator's certificate is self-signed,
//     made for the run, with a key derived from the secret, and a node
//     accepts no other key (the secret pins it);
//   - the coordinator's first message is a Challenge (a fresh nonce); the
//     node's Hello carries Proof, an HMAC with the secret of the nonce,
//     the TLS session's exported keying material, its index and its
//     token. A wrong or missing proof closes the link before the node is
//     given anything.
const (
	// SecretEnv names the environment variable a node (and a coordinator
	// of remote nodes) reads the run's secret from.
	SecretEnv = "LOCKBENCH_NODE_SECRET"
	// TokenEnv names the environment variable a node started by its
	// coordinator reads its token from.
	TokenEnv = "LOCKBENCH_NODE_TOKEN"
	// MinSecret is the fewest bytes a secret may have.
	MinSecret = 32
	// maxSecret is the most: a secret is a line, not a file's worth.
	maxSecret = 4096
)

var (
	// ErrAuth is the error of a peer that did not prove it holds the
	// run's secret (a node), or whose key is not the secret's (a
	// coordinator).
	ErrAuth = errors.New("nodeproto: not authenticated")
	// ErrSecret is the error of a secret that cannot be one: too short,
	// too long, or not one line of text.
	ErrSecret = errors.New("nodeproto: bad node secret")
)

// NewSecret is a fresh secret for a run: 32 random bytes, in hex.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckSecret refuses what cannot be a secret (ErrSecret).
func CheckSecret(s string) error {
	switch {
	case len(s) < MinSecret:
		return fmt.Errorf("%w: %d bytes, fewer than %d (make one with: head -c 32 /dev/urandom | base64)", ErrSecret, len(s), MinSecret)
	case len(s) > maxSecret:
		return fmt.Errorf("%w: more than %d bytes", ErrSecret, maxSecret)
	case strings.ContainsAny(s, "\r\n\x00"):
		return fmt.Errorf("%w: not one line of text", ErrSecret)
	}
	return nil
}

// ReadSecretFile reads a secret from the regular file at path (its
// surrounding blanks and line end dropped) and checks it.
func ReadSecretFile(path string) (string, error) {
	// Non-blocking: a FIFO is refused below, not waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSecret, err) // fs.ErrNotExist, say
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrSecret, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecret+2))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrSecret, path, err)
	}
	s := strings.TrimSpace(string(b))
	if err := CheckSecret(s); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// CreateSecretFile writes a fresh secret to path, a file that must not
// exist yet, readable by its owner only, and returns it.
func CreateSecretFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSecret, err)
	}
	s := NewSecret()
	_, err = f.WriteString(s + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("%w: writing %s: %v", ErrSecret, path, err)
	}
	return s, nil
}

// derive is a key for purpose, derived from the secret.
func derive(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("lockbench node protocol: " + purpose))
	return m.Sum(nil)
}

// coordinatorKey is the coordinator's TLS key, which the secret pins.
func coordinatorKey(secret string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(derive(secret, "coordinator key"))
}

// ServerTLS is the coordinator's TLS configuration for a run of secret:
// a certificate made now, self-signed with the secret's key.
func ServerTLS(secret string) (*tls.Config, error) {
	if err := CheckSecret(secret); err != nil {
		return nil, err
	}
	key := coordinatorKey(secret)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "lockbench coordinator"},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	}, nil
}

// ClientTLS is a node's TLS configuration: it accepts the coordinator
// whose certificate's key is the secret's, whatever its name (the
// certificate is made per run; no authority signs it).
func ClientTLS(secret string) *tls.Config {
	want := coordinatorKey(secret).Public().(ed25519.PublicKey)
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: the coordinator sent no certificate", ErrAuth)
			}
			got, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
			if !ok || !bytes.Equal(got, want) {
				return fmt.Errorf("%w: the coordinator's key is not the run secret's (a wrong secret, or not lockbench's coordinator)", ErrAuth)
			}
			return nil
		},
	}
}

// nonceSize is the size of a challenge's nonce.
const nonceSize = 32

// proof is a node's answer to the challenge nonce on the TLS session cs.
func proof(secret string, cs tls.ConnectionState, nonce []byte, node int, token string) ([]byte, error) {
	ekm, err := cs.ExportKeyingMaterial("lockbench node proof", nil, 32)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, derive(secret, "node proof"))
	m.Write(nonce)
	m.Write(ekm)
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(node)))
	m.Write([]byte(token))
	return m.Sum(nil), nil
}

// Accept is the coordinator's side of a node's connection: the TLS
// handshake, the challenge, and the node's hello with its proof. It
// returns the link and the hello, or ErrAuth (or the connection's
// error), leaving conn for the caller to close (once it noted why). ctx
// bounds the handshake; the caller bounds the rest with conn's deadline.
func Accept(ctx context.Context, conn net.Conn, cfg *tls.Config, secret string) (*Link, *Message, error) {
	tc := tls.Server(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("%w: TLS: %v", ErrAuth, err)
	}
	l := NewLink(tc)
	nonce := make([]byte, nonceSize)
	rand.Read(nonce)
	l.Send(&Message{Kind: Challenge, Nonce: nonce})
	m, err := l.Hello()
	if err != nil {
		l.stop()
		return nil, nil, err
	}
	want, err := proof(secret, tc.ConnectionState(), nonce, m.Node, m.Token)
	if err != nil || !hmac.Equal(m.Proof, want) {
		l.stop()
		return nil, nil, fmt.Errorf("%w: node %d's hello does not prove the run's secret", ErrAuth, m.Node)
	}
	return l, m, nil
}

// Connect is a node's side of its connection: the TLS handshake (the
// coordinator's key checked against the secret's), the challenge, and
// hello, sent with its proof. ctx bounds the handshake; the caller
// bounds the challenge's wait with conn's deadline.
func Connect(ctx context.Context, conn net.Conn, secret string, hello *Message) (*Link, error) {
	tc := tls.Client(conn, ClientTLS(secret))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: TLS: %v", ErrAuth, err)
	}
	l := NewLink(tc)
	m, err := l.Recv()
	if err != nil {
		l.Close()
		return nil, err
	}
	if m.Kind != Challenge || len(m.Nonce) != nonceSize {
		l.Close()
		return nil, fmt.Errorf("%w: the coordinator's first message is %v, not a challenge", ErrMalformed, m.Kind)
	}
	p, err := proof(secret, tc.ConnectionState(), m.Nonce, hello.Node, hello.Token)
	if err != nil {
		l.Close()
		return nil, err
	}
	h := *hello
	h.Kind, h.Proof = Hello, p
	l.Send(&h)
	return l, nil
}
