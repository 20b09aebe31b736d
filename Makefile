.DEFAULT_GOAL := help
.PHONY: help run test fuzz bench bench-join bench-redis bench-sse lint

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## run rushgate on the embedded backend
	go run ./cmd/rushgate serve

test: ## run the tests as CI does
	go test -race ./...

fuzz: ## fuzz the parsers, token verification, forwarding headers, the embedded lines file and backups to restore for a minute each
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 1m ./internal/visitor
	go test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime 1m ./admission
	go test -run '^$$' -fuzz '^FuzzMergePatch$$' -fuzztime 1m .
	go test -run '^$$' -fuzz '^FuzzDecodeConfig$$' -fuzztime 1m ./internal/room
	go test -run '^$$' -fuzz '^FuzzDecodeConfig$$' -fuzztime 1m ./internal/auction
	go test -run '^$$' -fuzz '^FuzzDecodeConfig$$' -fuzztime 1m ./internal/drop
	go test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 1m ./internal/memstore
	go test -run '^$$' -fuzz '^FuzzJournal$$' -fuzztime 1m ./internal/memstore
	go test -run '^$$' -fuzz '^FuzzClientAddr$$' -fuzztime 1m ./internal/httpapi
	go test -run '^$$' -fuzz '^FuzzQuickBid$$' -fuzztime 1m ./internal/httpapi
	go test -run '^$$' -fuzz '^FuzzSession$$' -fuzztime 1m ./internal/console
	go test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime 1m ./internal/challenge
	go test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime 1m ./webhook
	go test -run '^$$' -fuzz '^FuzzRestore$$' -fuzztime 1m ./internal/backup

bench: ## Go benchmarks of the store and the join handler
	go test -run '^$$' -bench . -benchtime 20000x ./internal/memstore ./internal/httpapi

bench-join: ## join requests/s against the null handler, through HTTP
	bench/join.sh

bench-redis: ## join requests/s on the Redis backend against the null handler and redis-benchmark
	bench/redis-join.sh

bench-sse: ## 10,000 idle event streams: memory per stream and admission latency
	bench/sse.sh

lint: ## gofmt, go vet and staticcheck, as CI runs them
	test -z "$$(gofmt -l .)"
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
