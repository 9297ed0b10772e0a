package paced

// Walk guards one paged read against pages that never end. It is not
// safe for concurrent use: a walk is one read's.
type Walk struct {
	budget int
	pages  int
	seen   map[string]bool
}

// NewWalk returns a walk that reads at most budget pages (at least 1).
func NewWalk(budget int) *Walk {
	return &Walk{budget: max(budget, 1), seen: map[string]bool{}}
}

// Next records a page read that says there is more, leading to cursor.
// It refuses, with a [*WalkError], an empty cursor ([ErrNoCursor]), a
// cursor this walk has followed before ([ErrCursorLoop]), and a next page
// past the budget ([ErrPageBudget]).
func (w *Walk) Next(cursor string) error {
	w.pages++
	var err error
	switch {
	case cursor == "":
		err = ErrNoCursor
	case w.seen[cursor]:
		err = ErrCursorLoop
	case w.pages >= w.budget:
		err = ErrPageBudget
	}
	if err != nil {
		return &WalkError{Page: w.pages, Cursor: cursor, Err: err}
	}
	w.seen[cursor] = true
	return nil
}

// Pages is the number of pages [Walk.Next] has been told of.
func (w *Walk) Pages() int { return w.pages }
