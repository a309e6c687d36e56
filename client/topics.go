package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

const (
	// topicPageLimitMax is the largest page the server serves
	// (docs/api.md#list-topics).
	topicPageLimitMax = 1000
	// topicPagesMax bounds AllTopics: 10,000 pages of 1,000 topics.
	topicPagesMax = 10_000
)

// ErrPageTokenStuck is returned by AllTopics when the server hands back a
// page token that does not advance past the previous one.
var ErrPageTokenStuck = errors.New("topic listing page token did not advance")

// CreateTopic creates a topic (POST /v1/topics, 201).
func (c *Client) CreateTopic(ctx context.Context, req CreateTopicRequest) (Topic, error) {
	var topic Topic
	err := c.sendJSON(ctx, http.MethodPost, "/v1/topics", req, &topic, http.StatusCreated)
	return topic, err
}

// ListTopics returns one page of topics (GET /v1/topics). A limit ≤ 0 lets
// the server choose (100); pageToken "" starts at the beginning.
func (c *Client) ListTopics(ctx context.Context, limit int, pageToken string) (TopicPage, error) {
	query := url.Values{}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	if pageToken != "" {
		query.Set("page_token", pageToken)
	}
	var page TopicPage
	err := c.getJSON(ctx, "/v1/topics", query, &page)
	return page, err
}

// AllTopics follows the keyset pagination of GET /v1/topics to the end.
func (c *Client) AllTopics(ctx context.Context) ([]Topic, error) {
	var topics []Topic
	token := ""
	for range topicPagesMax {
		page, err := c.ListTopics(ctx, topicPageLimitMax, token)
		if err != nil {
			return nil, err
		}
		topics = append(topics, page.Topics...)
		if page.NextPageToken == "" {
			return topics, nil
		}
		// Keyset tokens are the last name returned, so they strictly grow.
		if page.NextPageToken <= token {
			return nil, fmt.Errorf("%w: %q after %q", ErrPageTokenStuck, page.NextPageToken, token)
		}
		token = page.NextPageToken
	}
	return nil, fmt.Errorf("topic listing exceeds %d pages", topicPagesMax)
}

// GetTopic describes a topic with its partition stats (GET
// /v1/topics/{t}). A non-nil partition asks for that partition's stats only.
func (c *Client) GetTopic(ctx context.Context, topic string, partition *int) (Topic, error) {
	query := url.Values{}
	if partition != nil {
		query.Set("partition", strconv.Itoa(*partition))
	}
	var described Topic
	err := c.getJSON(ctx, topicPath(topic, ""), query, &described)
	return described, err
}

// AlterTopic changes the fields set in req (PATCH /v1/topics/{t}, 200).
func (c *Client) AlterTopic(ctx context.Context, topic string, req AlterTopicRequest) (Topic, error) {
	var altered Topic
	err := c.sendJSON(ctx, http.MethodPatch, topicPath(topic, ""), req, &altered, http.StatusOK)
	return altered, err
}

// TopicSchema reads a topic's JSON Schema back (GET
// /v1/topics/{t}/schema): the latest version when version is 0, else that
// version (the server keeps the last few). A topic without a schema is a
// 404 *APIError.
func (c *Client) TopicSchema(ctx context.Context, topic string, version int) (TopicSchema, error) {
	query := url.Values{}
	if version != 0 {
		query.Set("version", strconv.Itoa(version))
	}
	var schema TopicSchema
	err := c.getJSON(ctx, topicPath(topic, "/schema"), query, &schema)
	return schema, err
}

// DeleteTopic deletes a topic and its data (DELETE /v1/topics/{t}, 204).
func (c *Client) DeleteTopic(ctx context.Context, topic string) error {
	return c.sendJSON(ctx, http.MethodDelete, topicPath(topic, ""), nil, nil, http.StatusNoContent)
}
