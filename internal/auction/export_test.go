package auction

// Hubs counts the auctions that s holds a hub for: none once every feed has closed.
func Hubs(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hubs)
}
