// Command s3manifest plays the story fencing tokens exist for against a
// table kept in an S3 bucket as data files and one manifest, the way
// SlateDB and Delta Lake commit many objects at once:
//
//  1. Client A locks table:orders and gets a token.
//  2. A pauses (a GC pause, a stalled VM) past its lease.
//  3. The lease runs out; client B locks, writes its data files under keys
//     no one else writes (the token is in their names) and commits them
//     with one fenced PUT of the manifest, which lists them and carries
//     B's token.
//  4. A wakes up, still believing it holds the lock, writes its own data
//     files and tries to commit.
//
// A's data files land, but nothing refers to them; its commit, the one
// conditional PUT of the manifest, is refused by s3guard, which reports
// the refusal to the fenceview server. Readers follow the manifest, so
// they never see A's files; A deletes them.
//
//	go run ./examples/s3manifest -s3 http://127.0.0.1:7070 -bucket tables
//
// Credentials come from -access-key and -secret-key (or the environment's
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/examples/internal/story"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/s3guard"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

func main() { cmdmain.Main("s3manifest", run) }

// Manifest is the table's one mutable object: the data files of the
// table's current version, and the token that committed them. Carrying the
// token makes every commit's bytes differ from the last, so the manifest's
// ETag changes with every commit.
type Manifest struct {
	Token int64    `json:"token"`
	Files []string `json:"files"`
}

// run plays the story and returns an error unless A's commit was
// refused, the manifest lists B's files and the refusal was reported.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := story.NewCommand("s3manifest")
	paused := cmd.PausedFlags()
	_ = cmd.Set("resource", "table:orders")
	endpoint := cmd.Required("s3", "the S3 endpoint, http(s)://host:port")
	bucket := cmd.Required("bucket", "the bucket the table lives in")
	accessKey := cmd.String("access-key", os.Getenv("AWS_ACCESS_KEY_ID"), "S3 access key (env AWS_ACCESS_KEY_ID)")
	secretKey := cmd.String("secret-key", os.Getenv("AWS_SECRET_ACCESS_KEY"), "S3 secret key (env AWS_SECRET_ACCESS_KEY)")
	region := cmd.String("region", "us-east-1", "S3 region")
	prefix := cmd.String("prefix", fmt.Sprintf("run-%d/", time.Now().UnixNano()), "where the table's objects go in the bucket (a fresh prefix per run by default: a new server starts its tokens at 1)")
	c, closeAll, err := cmd.Connect(ctx, args)
	if err != nil {
		return err
	}
	defer closeAll()
	api := s3.New(s3.Options{
		Region: *region, BaseEndpoint: endpoint, UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: *accessKey, SecretAccessKey: *secretKey}, nil
		}),
	})
	table := *prefix + "orders/"
	manifestKey := table + "_manifest.json"
	// One lock governs the whole table: the guard checks tokens against
	// it, and reports its refusals under it. Built from the client, the
	// guard verifies the tokens' signatures with the server's keys.
	g, err := s3guard.NewFrom(ctx, c, api, *bucket, s3guard.WithSource("s3manifest"),
		s3guard.WithResource(func(string) string { return paused.Resource }))
	if err != nil {
		return err
	}

	race, err := story.Pause(ctx, c, paused, ", will commit its data files", stdout)
	if err != nil {
		return err
	}
	filesB, err := writeData(ctx, api, *bucket, table, race.TokenB, "B")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "B wrote %s\n", strings.Join(filesB, ", "))
	d, err := commit(ctx, g, manifestKey, race.B.Token(), filesB)
	if err := story.Accepted("B", d, err); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "B committed %s with token %d\n", manifestKey, race.TokenB)

	// A wakes up and commits without looking: the manifest's conditional
	// PUT has to refuse it. Its data files land first, under their own keys.
	var filesA []string
	_, refused, err := race.Late(ctx, stdout, func(token int64) (d guard.Decision, err error) {
		if filesA, err = writeData(ctx, api, *bucket, table, token, "A"); err != nil {
			return d, err
		}
		return commit(ctx, g, manifestKey, race.GrantA, filesA) // A's grant as A kept it, signed

	})
	if err != nil {
		return err
	}
	rejections, err := c.Rejections(ctx, client.RejectionQuery{Resource: paused.Resource, Source: "s3manifest"})
	if err != nil {
		return fmt.Errorf("rejection history: %w", err)
	}
	fmt.Fprintf(stdout, "refusals reported to fenceview by s3manifest: %d\n", len(rejections.Rejections))
	for _, f := range filesA {
		if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(f)}); err != nil {
			return fmt.Errorf("delete %s: %w", f, err)
		}
	}
	fmt.Fprintf(stdout, "A deleted its uncommitted files %s\n", strings.Join(filesA, ", "))

	// A reader follows the manifest.
	m, err := readManifest(ctx, api, *bucket, manifestKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the manifest lists %s (token %d)\n", strings.Join(m.Files, ", "), m.Token)
	if m.Token != race.TokenB || strings.Join(m.Files, ",") != strings.Join(filesB, ",") || refused.Required != race.TokenB || len(rejections.Rejections) != 1 {
		return fmt.Errorf("unexpected end state: manifest %+v, required %d, reported %d", m, refused.Required, len(rejections.Rejections))
	}
	return nil
}

// writeData writes a writer's data files under keys that carry its token:
// no two writers share a key, so these PUTs need no fence (If-None-Match:
// * only makes sure of it). Until a manifest lists them, no reader sees
// them.
func writeData(ctx context.Context, api *s3.Client, bucket, table string, token int64, who string) ([]string, error) {
	var keys []string
	for part := range 2 {
		key := fmt.Sprintf("%sdata/%d-%d.csv", table, token, part)
		body := fmt.Sprintf("order,qty\n%s-%d,%d\n", who, part, part+1)
		_, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body), IfNoneMatch: aws.String("*")})
		if err != nil {
			return nil, fmt.Errorf("%s: write %s: %w", who, key, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// commit makes files the table's current version: one fenced PUT of the
// manifest, which carries the token.
func commit(ctx context.Context, g *s3guard.Guard, key string, t client.Token, files []string) (guard.Decision, error) {
	body, err := json.Marshal(Manifest{Token: t.Number, Files: files})
	if err != nil {
		return guard.Decision{}, err
	}
	return g.PutObject(ctx, s3guard.Object{Key: key, Body: bytes.NewReader(body), ContentType: "application/json"}, t)
}

func readManifest(ctx context.Context, api *s3.Client, bucket, key string) (Manifest, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return Manifest{}, fmt.Errorf("read %s: %w", key, err)
	}
	defer out.Body.Close()
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(out.Body, 1<<20)).Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("read %s: %w", key, err)
	}
	return m, nil
}
