package sasl

import (
	"fmt"
	"regexp"
	"strings"
)

// kerberosName is KerberosName's parser: service[/host]@realm, or a bare
// name without '@'.
var kerberosName = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// Principal is how ZooKeeper's SaslServerCallbackHandler turns an
// authenticated name into the id of `sasl:<id>`: the name is read as a
// Kerberos principal service[/host][@realm]; the host is kept unless
// removeHost (zookeeper.kerberos.removeHostFromPrincipal=true), the realm
// unless removeRealm (…removeRealmFromPrincipal=true). ZooKeeper maps the
// short name through Kerberos auth_to_local rules as well; zkbridge applies
// the DEFAULT rule only (the service part is the short name).
func Principal(name string, removeHost, removeRealm bool) (string, error) {
	m := kerberosName.FindStringSubmatch(name)
	if m == nil {
		if strings.Contains(name, "@") {
			return "", fmt.Errorf("malformed Kerberos name %q", name)
		}
		return name, nil
	}
	id := m[1]
	if m[2] != "" && !removeHost {
		id += "/" + m[3]
	}
	if !removeRealm {
		id += "@" + m[4]
	}
	return id, nil
}
