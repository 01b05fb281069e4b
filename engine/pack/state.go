package pack

// StatusState returns the object's status.state, the one-word summary Loom
// writes on its parents ("Ready", "Building", ...), or "" when it has none.
// It scans the packed JSON for that one field, decoding nothing else, so
// that counting a fleet's parents by state costs no decode per event.
func (p *Packed) StatusState() string {
	if p == nil {
		return ""
	}
	var state string
	_, _ = eachMember(p.raw, func(key, _, val []byte) error {
		if string(key) != "status" {
			return nil
		}
		_, _ = eachMember(val, func(key, _, val []byte) error {
			if string(key) != "state" {
				return nil
			}
			state, _ = jsonString(val)
			return errDone
		})
		return errDone
	})
	return state
}
