package drop

// Feeds counts the drops that s reads for live feeds: none once every feed has closed.
func Feeds(s *Service) int {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	return len(s.feeds)
}
