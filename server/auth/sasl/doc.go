// Package sasl is the server side of ZooKeeper's SASL authentication
// (opcode 102): DIGEST-MD5 per RFC 2831 as ZooKeeper 3.8 runs it through
// the JDK (realm "zk-sasl-md5", protocol "zookeeper", qop auth,
// md5-sess), the JAAS login file that names its users
// (`Server { org.apache.zookeeper.server.auth.DigestLoginModule required
// user_<name>="<password>"; };`), and the rules by which ZooKeeper turns
// an authenticated principal into the id `sasl:<name>`.
//
// It knows nothing of connections: the ZooKeeper door feeds each client
// token to a Digest exchange and sends back what it returns.
package sasl
