package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
)

// AuthConfig is SASL authentication and its enforcement (docs/security.md,
// "Authentication"). Its zoo.cfg keys are ZooKeeper's system properties,
// with or without their "zookeeper." prefix (zoo.cfg turns an unknown key
// k into the property zookeeper.k).
type AuthConfig struct {
	// JAASFile is the JAAS login file whose Server section lists the
	// DIGEST-MD5 users (java.security.auth.login.config). Empty: no SASL
	// server; a client's SASL token gets an empty answer, as from a
	// ZooKeeper started without one.
	JAASFile string `yaml:"jaas_file"`
	// Krb5Conf is the Kerberos configuration whose default_realm decides
	// which principals the default auth_to_local rule shortens
	// (java.security.krb5.conf; default /etc/krb5.conf, as the JDK's).
	Krb5Conf string `yaml:"krb5_conf"`
	// SASLLoginContext is the JAAS section read (zookeeper.sasl.serverconfig;
	// default Server).
	SASLLoginContext string `yaml:"sasl_login_context"`
	// AuthProviders are the authProvider.N class names. The sasl scheme of
	// ACLs and enforce.auth.schemes=sasl need SASLAuthenticationProvider.
	AuthProviders []string `yaml:"auth_providers"`
	// SASLRequired closes every connection that sends a request before
	// authenticating with SASL (zookeeper.sessionRequireClientSASLAuth);
	// it implies EnforceAuth with the scheme sasl.
	SASLRequired bool `yaml:"sasl_required"`
	// EnforceAuth and EnforceAuthSchemes: a connection must hold an id of
	// one of these schemes before any request but auth and sasl
	// (zookeeper.enforce.auth.enabled, zookeeper.enforce.auth.schemes).
	EnforceAuth        bool     `yaml:"enforce_auth"`
	EnforceAuthSchemes []string `yaml:"enforce_auth_schemes"`
	// SASLSuperUsers are the SASL ids that are super users
	// (zookeeper.superUser, zookeeper.superUser.*).
	SASLSuperUsers []string `yaml:"sasl_super_users"`
	// SASLSuperPassword is the password of the DIGEST-MD5 user "super",
	// overriding the JAAS file (zookeeper.SASLAuthenticationProvider.superPassword).
	SASLSuperPassword string `yaml:"sasl_super_password"`
	// RemoveHostFromPrincipal and RemoveRealmFromPrincipal strip
	// service/HOST@REALM principals down (zookeeper.kerberos.*).
	RemoveHostFromPrincipal  bool `yaml:"remove_host_from_principal"`
	RemoveRealmFromPrincipal bool `yaml:"remove_realm_from_principal"`
	// AllowSASLFailedClients keeps a connection open after a failed SASL
	// exchange (zookeeper.allowSaslFailedClients), unless SASL is required.
	AllowSASLFailedClients bool `yaml:"allow_sasl_failed_clients"`

	// users is the JAAS file's DIGEST-MD5 users, loaded by Validate.
	users map[string]string
	// kerberos is the JAAS file's Krb5LoginModule service (keytab and
	// principal), loaded by Validate; nil: DIGEST-MD5.
	kerberos       *sasl.Kerberos
	kerberosLoaded bool
}

// SASLProvider is the class that enables the sasl scheme.
const SASLProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// knownAuthProviders are the authProvider classes zkbridge implements.
var knownAuthProviders = map[string]bool{
	SASLProvider: true,
	"org.apache.zookeeper.server.auth.DigestAuthenticationProvider": true,
	"org.apache.zookeeper.server.auth.IPAuthenticationProvider":     true,
	"org.apache.zookeeper.server.auth.X509AuthenticationProvider":   true,
}

// SASLScheme reports whether the sasl scheme is enabled (authProvider.N =
// SASLAuthenticationProvider).
func (a *AuthConfig) SASLScheme() bool {
	for _, p := range a.AuthProviders {
		if p == SASLProvider {
			return true
		}
	}
	return false
}

// EnforcedSchemes returns the schemes a connection must authenticate with
// before its requests are served; nil: none enforced. SASLRequired wins
// over enforce.auth.*, as in ZooKeeper's AuthenticationHelper.
func (a *AuthConfig) EnforcedSchemes() []string {
	if a.SASLRequired {
		return []string{"sasl"}
	}
	if a.EnforceAuth {
		return a.EnforceAuthSchemes
	}
	return nil
}

// SASLUsers returns the DIGEST-MD5 users (nil without a JAAS file),
// loading the JAAS file if Validate has not.
func (a *AuthConfig) SASLUsers() (map[string]string, error) {
	if a.JAASFile == "" {
		return nil, nil
	}
	if a.users != nil {
		return a.users, nil
	}
	j, err := sasl.LoadJAAS(a.JAASFile)
	if err != nil {
		return nil, err
	}
	section := a.SASLLoginContext
	if section == "" {
		section = sasl.DefaultServerSection
	}
	users, err := j.Users(section)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.JAASFile, err)
	}
	a.users = users
	return users, nil
}

// DefaultKerberosRealm is the default realm of Krb5Conf (or
// /etc/krb5.conf), "" without one.
func (a *AuthConfig) DefaultKerberosRealm() string {
	path := a.Krb5Conf
	if path == "" {
		path = "/etc/krb5.conf"
	}
	return sasl.DefaultRealm(path)
}

// SASLKerberos returns the Kerberos service of the JAAS Server section
// (a com.sun.security.auth.module.Krb5LoginModule with keyTab and
// principal), nil when it has none. With one, the SASL mechanism is
// GSSAPI, as ZooKeeper picks it when its login holds a Kerberos principal.
func (a *AuthConfig) SASLKerberos() (*sasl.Kerberos, error) {
	if a.JAASFile == "" || a.kerberosLoaded {
		return a.kerberos, nil
	}
	j, err := sasl.LoadJAAS(a.JAASFile)
	if err != nil {
		return nil, err
	}
	section := a.SASLLoginContext
	if section == "" {
		section = sasl.DefaultServerSection
	}
	if m, ok := j.Module(section, sasl.KerberosLoginModule); ok {
		k, err := sasl.LoadKerberos(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.JAASFile, err)
		}
		a.kerberos = k
	}
	a.kerberosLoaded = true
	return a.kerberos, nil
}

func (a *AuthConfig) validate() error {
	if _, err := a.SASLUsers(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if _, err := a.SASLKerberos(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	schemes := a.EnforcedSchemes()
	if a.EnforceAuth && !a.SASLRequired && len(schemes) == 0 {
		return fmt.Errorf("config: enforce.auth.enabled is true: enforce.auth.schemes must be set (e.g. sasl, digest)")
	}
	for _, s := range schemes {
		switch s {
		case "ip", "digest", "x509":
		case "sasl":
			if !a.SASLScheme() {
				return fmt.Errorf("config: authentication scheme sasl is not available: add authProvider.1=%s", SASLProvider)
			}
		default:
			return fmt.Errorf("config: authentication scheme %q is not available (known: ip, digest, sasl, x509)", s)
		}
	}
	return nil
}

// LimitsConfig bounds what clients can make a node do (docs/security.md,
// "Limits").
type LimitsConfig struct {
	// ConnectionThrottleTokens enables ZooKeeper's global connection
	// throttle (a token bucket; 0: off): a new connection takes a token or
	// is closed at once. FillTime and FillCount refill it;
	// FreezeTime ≥ 0 adds BLUE's random early drop with DropIncrease,
	// DropDecrease and DecreaseRatio (zookeeper.connection_throttle_*).
	ConnectionThrottleTokens        int           `yaml:"connection_throttle_tokens"`
	ConnectionThrottleFillTime      time.Duration `yaml:"connection_throttle_fill_time"`
	ConnectionThrottleFillCount     int           `yaml:"connection_throttle_fill_count"`
	ConnectionThrottleFreezeTime    time.Duration `yaml:"connection_throttle_freeze_time"`
	ConnectionThrottleDropIncrease  float64       `yaml:"connection_throttle_drop_increase"`
	ConnectionThrottleDropDecrease  float64       `yaml:"connection_throttle_drop_decrease"`
	ConnectionThrottleDecreaseRatio float64       `yaml:"connection_throttle_decrease_ratio"`
	// RequestThrottleMaxRequests caps the requests being processed by the
	// node at once (zookeeper.request_throttle_max_requests; 0: only
	// globalOutstandingLimit). Requests past it wait, read from their
	// sockets no further: queued, never dropped.
	RequestThrottleMaxRequests int `yaml:"request_throttle_max_requests"`
	// EnforceQuota fails writes past a quota's hard limits with
	// QuotaExceeded (zookeeper.enforceQuota). Decided in apply: every
	// replica must use the same value.
	EnforceQuota bool `yaml:"enforce_quota"`
	// SessionlessTimeout closes a connection that has not completed its
	// ConnectRequest in time (zookeeper.nio.sessionlessCnxnTimeout; 10 s).
	SessionlessTimeout time.Duration `yaml:"sessionless_timeout"`
}

func (l *LimitsConfig) normalize() {
	if l.ConnectionThrottleFillTime <= 0 {
		l.ConnectionThrottleFillTime = time.Millisecond
	}
	if l.ConnectionThrottleFillCount <= 0 {
		l.ConnectionThrottleFillCount = 1
	}
	if l.ConnectionThrottleFreezeTime == 0 {
		l.ConnectionThrottleFreezeTime = -1
	}
	if l.ConnectionThrottleDropIncrease == 0 {
		l.ConnectionThrottleDropIncrease = 0.02
	}
	if l.ConnectionThrottleDropDecrease == 0 {
		l.ConnectionThrottleDropDecrease = 0.002
	}
	if l.SessionlessTimeout <= 0 {
		l.SessionlessTimeout = 10 * time.Second
	}
}

// DefaultZooCfgMaxClientCnxns is ZooKeeper's maxClientCnxns when zoo.cfg
// does not set it.
const DefaultZooCfgMaxClientCnxns = 60

// securityKey handles the zoo.cfg (and SERVER_JVMFLAGS -D) keys of
// AuthConfig and LimitsConfig, with or without the "zookeeper." prefix.
// It reports whether k was one of them.
func (c *Config) securityKey(k, v string) (bool, error) {
	key := strings.TrimPrefix(k, "zookeeper.")
	boolean := func() bool { return v == "true" }
	integer := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: not an integer", k, v)
		}
		return n, nil
	}
	millis := func(dst *time.Duration) error {
		n, err := integer()
		if err == nil {
			*dst = time.Duration(n) * time.Millisecond
		}
		return err
	}
	float := func(dst *float64) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s=%q: not a number", k, v)
		}
		*dst = f
		return nil
	}
	a, l := &c.Auth, &c.Limits
	var err error
	switch {
	case k == "java.security.auth.login.config":
		a.JAASFile = v
	case k == "java.security.krb5.conf":
		a.Krb5Conf = v
	case key == "sasl.serverconfig":
		a.SASLLoginContext = v
	case strings.HasPrefix(key, "authProvider."):
		if !knownAuthProviders[v] {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s=%s: zkbridge has no such authentication provider; ignored", k, v))
			return true, nil
		}
		a.AuthProviders = append(a.AuthProviders, v)
	case key == "sessionRequireClientSASLAuth":
		a.SASLRequired = boolean()
	case key == "enforce.auth.enabled":
		a.EnforceAuth = boolean()
	case key == "enforce.auth.schemes":
		a.EnforceAuthSchemes = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				a.EnforceAuthSchemes = append(a.EnforceAuthSchemes, s)
			}
		}
	case key == "superUser" || strings.HasPrefix(key, "superUser."):
		a.SASLSuperUsers = append(a.SASLSuperUsers, v)
	case key == "SASLAuthenticationProvider.superPassword":
		a.SASLSuperPassword = v
	case key == "kerberos.removeHostFromPrincipal":
		a.RemoveHostFromPrincipal = boolean()
	case key == "kerberos.removeRealmFromPrincipal":
		a.RemoveRealmFromPrincipal = boolean()
	case key == "allowSaslFailedClients":
		a.AllowSASLFailedClients = boolean()
	case key == "connection_throttle_tokens":
		l.ConnectionThrottleTokens, err = integer()
	case key == "connection_throttle_fill_time":
		err = millis(&l.ConnectionThrottleFillTime)
	case key == "connection_throttle_fill_count":
		l.ConnectionThrottleFillCount, err = integer()
	case key == "connection_throttle_freeze_time":
		err = millis(&l.ConnectionThrottleFreezeTime)
	case key == "connection_throttle_drop_increase":
		err = float(&l.ConnectionThrottleDropIncrease)
	case key == "connection_throttle_drop_decrease":
		err = float(&l.ConnectionThrottleDropDecrease)
	case key == "connection_throttle_decrease_ratio":
		err = float(&l.ConnectionThrottleDecreaseRatio)
	case key == "connection_throttle_weight_enabled" || strings.HasSuffix(key, "_session_weight"):
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: weighed connection throttling is not implemented; every connection takes one token", k))
	case key == "request_throttle_max_requests":
		l.RequestThrottleMaxRequests, err = integer()
	case key == "request_throttle_stall_time" || key == "request_throttle_drop_stale":
		// zkbridge's waiting requests stall on their own sockets (no
		// timed retry); a closed connection's unread requests are never
		// read.
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: accepted, not used: zkbridge leaves throttled requests unread on their sockets until room frees up (a closed connection's are never read)", k))
	case key == "enforceQuota":
		l.EnforceQuota = boolean()
	case key == "nio.sessionlessCnxnTimeout":
		err = millis(&l.SessionlessTimeout)
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("zoo.cfg %w", err)
	}
	return true, nil
}

// ApplyJVMFlags applies the -Dkey=value system properties of a
// SERVER_JVMFLAGS value (as zkServer.sh users set them) that zkbridge
// knows: java.security.auth.login.config and the SASL, enforcement and
// throttle keys. Others are ignored.
func (c *Config) ApplyJVMFlags(flags string) error {
	for _, f := range strings.Fields(flags) {
		prop, ok := strings.CutPrefix(f, "-D")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(prop, "=")
		if _, err := c.securityKey(k, strings.Trim(v, `"'`)); err != nil {
			return fmt.Errorf("SERVER_JVMFLAGS -D%s: %w", k, err)
		}
	}
	return nil
}

// ApplyServerJVMFlagsEnv applies $SERVER_JVMFLAGS (see ApplyJVMFlags).
func (c *Config) ApplyServerJVMFlagsEnv() error {
	return c.ApplyJVMFlags(os.Getenv("SERVER_JVMFLAGS"))
}
