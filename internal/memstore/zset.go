package memstore

// zset is an ordered set of members by int64 score with O(log N) insert, delete and rank: the in-memory
// twin of a Redis sorted set, built on a skip list whose links carry spans (as Redis's own does) so that
// a rank is counted while searching instead of by walking the list.
type zset struct {
	scores map[string]int64
	list   skiplist
}

func newZset() *zset {
	return &zset{scores: make(map[string]int64), list: newSkiplist()}
}

// Len returns the number of members.
func (z *zset) Len() int { return z.list.length }

// Score returns a member's score.
func (z *zset) Score(member string) (int64, bool) {
	s, ok := z.scores[member]
	return s, ok
}

// Add inserts member or moves it to a new score.
func (z *zset) Add(member string, score int64) {
	if old, ok := z.scores[member]; ok {
		if old == score {
			return
		}
		z.list.remove(old, member)
	}
	z.scores[member] = score
	z.list.insert(score, member)
}

// Remove deletes member and reports whether it was present.
func (z *zset) Remove(member string) bool {
	s, ok := z.scores[member]
	if !ok {
		return false
	}
	delete(z.scores, member)
	z.list.remove(s, member)
	return true
}

// Min returns the member with the lowest score.
func (z *zset) Min() (member string, score int64, ok bool) {
	n := z.list.head.next[0].forward
	if n == nil {
		return "", 0, false
	}
	return n.member, n.score, true
}

// CountAtMost returns how many members score at most s.
func (z *zset) CountAtMost(s int64) int { return z.list.countAtMost(s) }

const maxLevel = 32

type link struct {
	forward *node
	span    int
}

type node struct {
	member string
	score  int64
	next   []link
	first  [1]link // backs next for the three nodes in four that have one level: one allocation, not two
}

type skiplist struct {
	head   *node
	level  int
	length int
	seed   uint64
	// tail[i] is the last node linked at level i (head while the level is empty) and tailRank[i] its
	// rank, so that appending at the back, which is what every join does, needs no search.
	tail     [maxLevel]*node
	tailRank [maxLevel]int
}

func newSkiplist() skiplist {
	l := skiplist{head: &node{next: make([]link, maxLevel)}, level: 1, seed: 0x9E3779B97F4A7C15}
	for i := range l.tail {
		l.tail[i] = l.head
	}
	return l
}

func before(n *node, score int64, member string) bool {
	return n.score < score || (n.score == score && n.member < member)
}

// randomLevel draws a level with P(level > k) = 4^-k, from a private xorshift so that the list needs
// no lock of its own and no shared random source.
func (l *skiplist) randomLevel() int {
	lvl := 1
	for lvl < maxLevel {
		l.seed ^= l.seed << 13
		l.seed ^= l.seed >> 7
		l.seed ^= l.seed << 17
		if l.seed&3 != 0 {
			break
		}
		lvl++
	}
	return lvl
}

func (l *skiplist) insert(score int64, member string) {
	var update [maxLevel]*node
	var rank [maxLevel]int
	if last := l.tail[0]; last == l.head || before(last, score, member) {
		for i := 0; i < l.level; i++ { // appending: the predecessors are the tails
			update[i], rank[i] = l.tail[i], l.tailRank[i]
		}
	} else {
		l.search(score, member, &update, &rank)
	}
	lvl := l.randomLevel()
	if lvl > l.level {
		for i := l.level; i < lvl; i++ {
			update[i] = l.head
			l.head.next[i].span = l.length
		}
		l.level = lvl
	}
	n := &node{member: member, score: score}
	if lvl == 1 {
		n.next = n.first[:]
	} else {
		n.next = make([]link, lvl)
	}
	for i := 0; i < lvl; i++ {
		n.next[i].forward = update[i].next[i].forward
		update[i].next[i].forward = n
		n.next[i].span = update[i].next[i].span - (rank[0] - rank[i])
		update[i].next[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < l.level; i++ {
		update[i].next[i].span++
	}
	l.length++
	pos := rank[0] + 1
	for i := 0; i < l.level; i++ {
		switch {
		case i < lvl && update[i] == l.tail[i]: // linked right after the level's last node
			l.tail[i], l.tailRank[i] = n, pos
		case l.tailRank[i] >= pos: // the level's last node is behind the new one
			l.tailRank[i]++
		}
	}
}

// search fills update[i] with the last node before (score, member) at each level, and rank[i] with
// that node's rank.
func (l *skiplist) search(score int64, member string, update *[maxLevel]*node, rank *[maxLevel]int) {
	x := l.head
	for i := l.level - 1; i >= 0; i-- {
		if i < l.level-1 {
			rank[i] = rank[i+1]
		}
		for x.next[i].forward != nil && before(x.next[i].forward, score, member) {
			rank[i] += x.next[i].span
			x = x.next[i].forward
		}
		update[i] = x
	}
}

func (l *skiplist) remove(score int64, member string) {
	var update [maxLevel]*node
	var rank [maxLevel]int
	l.search(score, member, &update, &rank)
	x := update[0].next[0].forward
	if x == nil || x.score != score || x.member != member {
		return
	}
	pos := rank[0] + 1
	for i := 0; i < l.level; i++ {
		if update[i].next[i].forward == x {
			update[i].next[i].span += x.next[i].span - 1
			update[i].next[i].forward = x.next[i].forward
		} else {
			update[i].next[i].span--
		}
		switch {
		case l.tail[i] == x:
			l.tail[i], l.tailRank[i] = update[i], rank[i]
		case l.tailRank[i] > pos:
			l.tailRank[i]--
		}
	}
	for l.level > 1 && l.head.next[l.level-1].forward == nil {
		l.level--
	}
	l.length--
}

// min returns the first node, or nil.
func (l *skiplist) min() *node { return l.head.next[0].forward }

func (l *skiplist) rank(score int64, member string) int {
	r := 0
	x := l.head
	for i := l.level - 1; i >= 0; i-- {
		for f := x.next[i].forward; f != nil && (before(f, score, member) || (f.score == score && f.member == member)); f = x.next[i].forward {
			r += x.next[i].span
			x = f
		}
		if x != l.head && x.score == score && x.member == member {
			return r
		}
	}
	return 0
}

func (l *skiplist) countAtMost(score int64) int {
	r := 0
	x := l.head
	for i := l.level - 1; i >= 0; i-- {
		for f := x.next[i].forward; f != nil && f.score <= score; f = x.next[i].forward {
			r += x.next[i].span
			x = f
		}
	}
	return r
}
