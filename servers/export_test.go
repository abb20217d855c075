package servers

// HoldEtcd stops the members of e at idx until resume is called.
func HoldEtcd(e *Etcd, idx ...int) (resume func(), err error) {
	var ms []*etcdMember
	for _, i := range idx {
		ms = append(ms, e.members[i])
	}
	return e.hold(ms)
}

// HoldPostgres stops p's processes until resume is called.
func HoldPostgres(p *Postgres) (resume func(), err error) { return p.hold() }
