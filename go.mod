module github.com/rushgate/rushgate

go 1.26.8
