module sandlock.dev/sandlock/go

go 1.19
