// A tiny HTTPS server on Go's crypto/tls, for tests that need what Debian's OpenSSL 3.0 cannot
// serve: the hybrid post-quantum groups (X25519MLKEM768 is in Go's defaults since 1.24,
// SecP256r1MLKEM768 and SecP384r1MLKEM1024 since 1.26).
//
//	server -cert leaf.pem -key leaf.key [-groups X25519MLKEM768,X25519] [-hsts "max-age=63072000"]
//	       [-suites TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA]
//
// -suites sets the TLS 1.2 suites, insecure ones (3DES) included, which Debian's OpenSSL 3.0 no
// longer has. Go picks among them by its own ranking (3DES always last), not in the listed order.
//
// It prints its port on the first line of stdout, then serves until killed.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

var groupNames = map[string]tls.CurveID{
	"X25519MLKEM768":     tls.X25519MLKEM768,
	"SecP256r1MLKEM768":  tls.SecP256r1MLKEM768,
	"SecP384r1MLKEM1024": tls.SecP384r1MLKEM1024,
	"X25519":             tls.X25519,
	"P256":               tls.CurveP256,
	"P384":               tls.CurveP384,
	"P521":               tls.CurveP521,
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	certFile := flag.String("cert", "", "certificate chain PEM")
	keyFile := flag.String("key", "", "private key PEM")
	groups := flag.String("groups", "", "key-exchange groups in server preference order; empty = Go's defaults")
	hsts := flag.String("hsts", "", "Strict-Transport-Security value to send, if any")
	suites := flag.String("suites", "", "TLS 1.2 cipher suites by IANA name; empty = Go's defaults")
	flag.Parse()

	pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fail(err)
	}
	config := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if *groups != "" {
		for _, name := range strings.Split(*groups, ",") {
			id, ok := groupNames[name]
			if !ok {
				fail(fmt.Errorf("unknown group %q", name))
			}
			config.CurvePreferences = append(config.CurvePreferences, id)
		}
	}
	if *suites != "" {
		for _, name := range strings.Split(*suites, ",") {
			config.CipherSuites = append(config.CipherSuites, suiteID(name))
		}
	}
	listener, err := tls.Listen("tcp", *addr, config)
	if err != nil {
		fail(err)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if *hsts != "" {
			w.Header().Set("Strict-Transport-Security", *hsts)
		}
		fmt.Fprintln(w, "tls audit go test server")
	})
	server := &http.Server{Handler: handler, ErrorLog: nil}
	if err := server.Serve(listener); err != nil {
		fail(err)
	}
}

func suiteID(name string) uint16 {
	for _, suite := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if suite.Name == name {
			return suite.ID
		}
	}
	fail(fmt.Errorf("unknown cipher suite %q", name))
	return 0
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gotls:", err)
	os.Exit(1)
}
