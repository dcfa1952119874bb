module tlsaudit.test/goclient

// Module mode with a current go line: the client gets this Go's default groups (hybrid PQ first).
go 1.26
