package devserver

import (
	"strings"
	"testing"
)

func TestPostgresStores(t *testing.T) {
	main, vis, err := postgresStores("postgres://temporal:s3cret@db.internal/temporal_prod?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	if main.ConnectAddr != "db.internal:5432" || main.User != "temporal" || main.Password != "s3cret" ||
		main.DatabaseName != "temporal_prod" || main.ConnectAttributes["sslmode"] != "require" || main.PluginName != "postgres12" {
		t.Errorf("main store %+v", main)
	}
	if vis.DatabaseName != "temporal_prod_visibility" || vis.ConnectAddr != main.ConnectAddr {
		t.Errorf("visibility store %+v", vis)
	}
	if m, _, err := postgresStores("postgresql://u@127.0.0.1:15432"); err != nil || m.DatabaseName != "temporal" || m.ConnectAddr != "127.0.0.1:15432" {
		t.Errorf("defaults: %+v %v", m, err)
	}
	for _, bad := range []string{"mysql://u:pw@h/db", "127.0.0.1:5432", "postgres:///db"} {
		if _, _, err := postgresStores(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, _, err := postgresStores("mysql://u:topsecret@h/db"); err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestListenPorts(t *testing.T) {
	ip, ports, err := listenPorts("0.0.0.0:7233")
	if err != nil || ip != "0.0.0.0" || len(ports) != 8 || ports[0] != 7233 || ports[7] != 7240 {
		t.Errorf("%s %v %v", ip, ports, err)
	}
	if broadcastIP(ip) != "127.0.0.1" || broadcastIP("10.0.0.5") != "10.0.0.5" {
		t.Error("broadcast address")
	}
	for _, bad := range []string{"localhost:7233", "127.0.0.1", "127.0.0.1:65530", "127.0.0.1:x"} {
		if _, _, err := listenPorts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, ports, err := listenPorts(""); err != nil || len(ports) != 8 {
		t.Errorf("free ports: %v %v", ports, err)
	}
}
