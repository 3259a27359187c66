module github.com/gantry-cd/gantry/hack/ci-local/kv

go 1.26

require github.com/alicebob/miniredis/v2 v2.40.0

require github.com/yuin/gopher-lua v1.1.1 // indirect
