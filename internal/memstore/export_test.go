package memstore

// Undurable tells tests how many steps of an auction are decided and not yet committed.
func (a *Auctions) Undurable(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.auctions[id].undurable)
}
