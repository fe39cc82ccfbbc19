module github.com/verbsim/verbsim

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	pgregory.net/rapid v1.2.0
)
