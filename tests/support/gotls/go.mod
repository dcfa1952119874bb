module tlsaudit.test/gotls

// 1.24+: the hybrid post-quantum groups are in the defaults (GODEBUG follows this line).
go 1.26
