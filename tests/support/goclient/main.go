// A Go crypto/tls client with Go's defaults, for tests/support/record_clients.py: it connects to
// localhost:PORT and starts a handshake, so that its ClientHello can be recorded. ALPN h2 and
// http/1.1 as Go's net/http client offers them; everything else is crypto/tls's default.
package main

import (
	"crypto/tls"
	"os"
)

func main() {
	conn, err := tls.Dial("tcp", "localhost:"+os.Args[1], &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err == nil {
		conn.Close()
	}
}
