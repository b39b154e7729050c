package file

import (
	"iter"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// stamps is when each of a file's keys was first seen in it. Most files
// define one object or a few, and a map for each cost about 600 bytes
// (3.5 MB of the live heap over the bench's 5,000 one-object files), so a
// short list is searched in order and only a file of many objects gets a
// map. The zero value is empty and ready to use.
type stamps struct {
	list  []keyStamp
	index map[config.Key]time.Time
}

type keyStamp struct {
	key config.Key
	ts  time.Time
}

// stampsListMax is the most keys kept in the list before it becomes a
// map.
const stampsListMax = 8

// get returns key's stamp, and whether it has one.
func (s *stamps) get(key config.Key) (time.Time, bool) {
	if s.index != nil {
		ts, ok := s.index[key]
		return ts, ok
	}
	for _, e := range s.list {
		if e.key == key {
			return e.ts, true
		}
	}
	return time.Time{}, false
}

// set gives key the stamp ts.
func (s *stamps) set(key config.Key, ts time.Time) {
	if s.index != nil {
		s.index[key] = ts
		return
	}
	for i := range s.list {
		if s.list[i].key == key {
			s.list[i].ts = ts
			return
		}
	}
	if len(s.list) < stampsListMax {
		s.list = append(s.list, keyStamp{key: key, ts: ts})
		return
	}
	s.index = make(map[config.Key]time.Time, 2*stampsListMax)
	for _, e := range s.list {
		s.index[e.key] = e.ts
	}
	s.index[key] = ts
	s.list = nil
}

// all yields every key and its stamp, in no particular order.
func (s *stamps) all() iter.Seq2[config.Key, time.Time] {
	return func(yield func(config.Key, time.Time) bool) {
		if s.index != nil {
			for k, ts := range s.index {
				if !yield(k, ts) {
					return
				}
			}
			return
		}
		for _, e := range s.list {
			if !yield(e.key, e.ts) {
				return
			}
		}
	}
}
