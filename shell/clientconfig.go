package shell

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/shell/zkclient"
)

type dialFunc func(addr string, timeout time.Duration) (net.Conn, error)

// readProperties reads a Java properties file (key=value or key: value,
// # and ! comments).
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[line] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props, sc.Err()
}

// clientConfig is what zkCli's -client-configuration file and
// CLIENT_JVMFLAGS ask of the connection.
type clientConfig struct {
	dial dialFunc                  // nil: plain TCP
	sasl *zkclient.SASLCredentials // nil: no SASL
}

// jaasFlag finds -Djava.security.auth.login.config=… in JVM flags.
var jaasFlag = regexp.MustCompile(`-Djava\.security\.auth\.login\.config=(\S+)`)

// loadClientConfig reads zkCli's -client-configuration file (path may be
// empty) and the JAAS file named there or in $CLIENT_JVMFLAGS, as the
// Java client does: TLS (loadTLS) and SASL, DIGEST-MD5 with the username
// and password of the JAAS section zookeeper.sasl.clientconfig (default
// Client) or GSSAPI with its Krb5LoginModule (kerberosLogin), unless
// zookeeper.sasl.client=false.
func loadClientConfig(path string) (clientConfig, error) {
	var cc clientConfig
	props := map[string]string{}
	if path != "" {
		var err error
		if props, err = readProperties(path); err != nil {
			return cc, fmt.Errorf("-client-configuration: %w", err)
		}
	}
	jaas := props["java.security.auth.login.config"]
	if m := jaasFlag.FindStringSubmatch(os.Getenv("CLIENT_JVMFLAGS")); jaas == "" && m != nil {
		jaas = m[1]
	}
	if jaas != "" && props["zookeeper.sasl.client"] != "false" {
		j, err := sasl.LoadJAAS(jaas)
		if err != nil {
			return cc, fmt.Errorf("JAAS file: %w", err)
		}
		section := props["zookeeper.sasl.clientconfig"]
		if section == "" {
			section = "Client"
		}
		// Java skips SASL when its section is absent; so do we.
		for _, m := range j.Sections[section] {
			switch m.Class {
			case sasl.DigestLoginModule:
				cc.sasl = &zkclient.SASLCredentials{User: m.Options["username"], Password: m.Options["password"]}
			case sasl.KerberosLoginModule:
				login, err := kerberosLogin(m, props)
				if err != nil {
					return cc, fmt.Errorf("JAAS %s section %s: %w", jaas, section, err)
				}
				cc.sasl = &zkclient.SASLCredentials{GSSAPI: login}
			default:
				return cc, fmt.Errorf("JAAS %s section %s: login module %s: zkbridge shell speaks DIGEST-MD5 (%s) and GSSAPI (%s) only", jaas, section, m.Class, sasl.DigestLoginModule, sasl.KerberosLoginModule)
			}
		}
	}
	var err error
	cc.dial, err = loadTLS(props)
	return cc, err
}

// loadTLS returns the dialer the properties ask for: TLS when
// zookeeper.client.secure=true, with the trust and key stores zkCli reads
// (zookeeper.ssl.trustStore.*, zookeeper.ssl.keyStore.*: PEM or PKCS12,
// the type from .type or the file's extension, as ZooKeeper). nil means
// plain TCP.
func loadTLS(props map[string]string) (dialFunc, error) {
	if props["zookeeper.client.secure"] != "true" {
		return nil, nil
	}
	store := func(prefix string) tlsconf.Store {
		return tlsconf.Store{
			Location: props[prefix+".location"],
			Password: props[prefix+".password"],
			Type:     props[prefix+".type"],
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ts := store("zookeeper.ssl.trustStore"); ts.Location != "" {
		pool, _, err := tlsconf.LoadTrustStore(ts)
		if err != nil {
			return nil, fmt.Errorf("-client-configuration: %w", err)
		}
		cfg.RootCAs = pool
	}
	if ks := store("zookeeper.ssl.keyStore"); ks.Location != "" {
		cert, err := tlsconf.LoadKeyStore(ks)
		if err != nil {
			return nil, fmt.Errorf("-client-configuration: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if props["zookeeper.ssl.hostnameVerification"] == "false" {
		// Java skips the host name check but still verifies the chain.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = tlsconf.VerifyChainOnly(cfg.RootCAs)
	}
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		c := cfg.Clone()
		if c.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			c.ServerName = host
		}
		return tls.DialWithDialer(d, "tcp", addr, c)
	}, nil
}
