package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// The console's page, script, style sheet and icon: hand-written, no build
// step, no framework, nothing fetched from elsewhere.
//
//go:embed assets
var assetFS embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

type assetSet struct {
	index  *asset
	static map[string]*asset // by file name
}

func loadAssets() (*assetSet, error) {
	set := &assetSet{static: map[string]*asset{}}
	entries, err := fs.ReadDir(assetFS, "assets")
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	for _, e := range entries {
		body, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("console asset %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, ctype: mime.TypeByExtension(path.Ext(e.Name())), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		if a.ctype == "" {
			a.ctype = "application/octet-stream"
		}
		if e.Name() == "index.html" {
			set.index = a
		} else {
			set.static[e.Name()] = a
		}
	}
	if set.index == nil {
		return nil, fmt.Errorf("console assets: no index.html")
	}
	return set, nil
}

// serve writes an asset. Browsers revalidate each time (the ETag makes
// that a 304), so a new binary's console is never mixed with an old
// cached script.
func (a *asset) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

func (c *Console) serveIndex(w http.ResponseWriter, r *http.Request) {
	c.assets.index.serve(w, r)
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	a := c.assets.static[r.PathValue("file")]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	a.serve(w, r)
}
