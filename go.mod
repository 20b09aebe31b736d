module github.com/rushgate/rushgate

go 1.26.8

require github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
