"""/api/v1/docs renders Swagger UI's operations in Chromium with no network beyond the server itself."""

from urllib.parse import urlsplit


def test_api_docs_render_offline(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(15_000)
    own = urlsplit(live_server.url).netloc
    blocked = []

    def only_the_server(route):
        if urlsplit(route.request.url).netloc == own:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_server)
    page = context.new_page()
    try:
        page.goto("/api/v1/docs")
        page.locator(".opblock").first.wait_for()
        assert page.locator(".opblock").count() > 20
        assert page.get_by_text("/api/v1/agents/{agent}/entries").first.is_visible()
        assert blocked == []
    finally:
        context.close()
