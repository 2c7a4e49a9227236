package engine

// msgList is an intrusive doubly linked list of messages, through their
// prev and next fields: a FIFO group's messages in sequence order, or a
// fair-queue tenant's visible messages. A message is in one list at most.
type msgList struct {
	head, tail *message
}

// pushBack appends m.
func (l *msgList) pushBack(m *message) {
	m.prev, m.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
}

// pushFront prepends m.
func (l *msgList) pushFront(m *message) {
	m.prev, m.next = nil, l.head
	if l.head != nil {
		l.head.prev = m
	} else {
		l.tail = m
	}
	l.head = m
}

// unlink removes m, which must be in l.
func (l *msgList) unlink(m *message) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.prev, m.next = nil, nil
}
