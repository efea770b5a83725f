package io.github.distlock.sample;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.jdbc.support.KeyHolder;
import org.springframework.stereotype.Repository;

/**
 * Products and orders in the relational database, through Spring's {@link JdbcClient}. Nothing here locks: callers
 * decide what runs under which lock and transaction.
 */
@Repository
public class ShopRepository {

    private final JdbcClient jdbc;

    ShopRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** The product, if it exists. */
    public Optional<Product> findProduct(long id) {
        return jdbc.sql("SELECT id, name, stock, fence_token FROM product WHERE id = ?")
                .param(id)
                .query((rs, row) -> new Product(rs.getLong(1), rs.getString(2), rs.getInt(3), rs.getLong(4)))
                .optional();
    }

    /** The product with its sold count, if it exists. */
    public Optional<ProductView> findProductView(long id) {
        return jdbc.sql("""
                SELECT p.id, p.name, p.stock, p.fence_token,
                       (SELECT COALESCE(SUM(o.quantity), 0) FROM orders o WHERE o.product_id = p.id)
                FROM product p WHERE p.id = ?""")
                .param(id)
                .query((rs, row) -> new ProductView(rs.getLong(1), rs.getString(2), rs.getInt(3), rs.getLong(5),
                        rs.getLong(4)))
                .optional();
    }

    /** Every product with its sold count, newest first, at most {@code limit}. */
    public List<ProductView> findProductViews(int limit) {
        return jdbc.sql("""
                SELECT p.id, p.name, p.stock, p.fence_token,
                       (SELECT COALESCE(SUM(o.quantity), 0) FROM orders o WHERE o.product_id = p.id)
                FROM product p ORDER BY p.id DESC LIMIT ?""")
                .param(limit)
                .query((rs, row) -> new ProductView(rs.getLong(1), rs.getString(2), rs.getInt(3), rs.getLong(5),
                        rs.getLong(4)))
                .list();
    }

    /** Inserts a product and returns its id. */
    public long insertProduct(String name, int stock) {
        KeyHolder keys = new GeneratedKeyHolder();
        jdbc.sql("INSERT INTO product (name, stock, fence_token) VALUES (?, ?, 0)")
                .params(name, stock)
                .update(keys, "id");
        return keys.getKeyAs(Long.class);
    }

    /**
     * Sets the stock if {@code fenceToken} is higher than the one that last wrote it, and records the token.
     *
     * @return whether the row was written: {@code false} when a holder with a newer token wrote it (or the product
     * does not exist)
     */
    public boolean updateStockFenced(long productId, int stock, long fenceToken) {
        return jdbc.sql("UPDATE product SET stock = ?, fence_token = ? WHERE id = ? AND fence_token < ?")
                .params(stock, fenceToken, productId, fenceToken)
                .update() == 1;
    }

    /** Sets the stock with no guard at all: the last writer wins. Only the unsafe variant does this. */
    public void updateStockUnguarded(long productId, int stock) {
        jdbc.sql("UPDATE product SET stock = ? WHERE id = ?").params(stock, productId).update();
    }

    /** Whether the user has an order for the product. */
    public boolean hasOrder(long userId, long productId) {
        return jdbc.sql("SELECT COUNT(*) FROM orders WHERE user_id = ? AND product_id = ?")
                .params(userId, productId)
                .query(Long.class)
                .single() > 0;
    }

    /**
     * Inserts an order and returns it as stored: read back, so that its {@code createdAt} is the one a later
     * {@code GET} shows (the column keeps less precision than {@link Instant#now()} and the database rounds).
     */
    public Order insertOrder(long userId, long productId, int quantity) {
        KeyHolder keys = new GeneratedKeyHolder();
        jdbc.sql("INSERT INTO orders (user_id, product_id, quantity, created_at) VALUES (?, ?, ?, ?)")
                .params(userId, productId, quantity, Timestamp.from(Instant.now()))
                .update(keys, "id");
        long id = keys.getKeyAs(Long.class);
        return findOrder(id).orElseThrow(() -> new IllegalStateException("Order " + id + " vanished after insert"));
    }

    /** The order, if it exists. */
    public Optional<Order> findOrder(long id) {
        return jdbc.sql("SELECT id, user_id, product_id, quantity, created_at FROM orders WHERE id = ?")
                .param(id)
                .query(ShopRepository::order)
                .optional();
    }

    /** The user's orders, oldest first. */
    public List<Order> findOrders(long userId) {
        return jdbc.sql("SELECT id, user_id, product_id, quantity, created_at FROM orders WHERE user_id = ? ORDER BY id")
                .param(userId)
                .query(ShopRepository::order)
                .list();
    }

    private static Order order(ResultSet rs, int row) throws SQLException {
        return new Order(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getInt(4), rs.getTimestamp(5).toInstant());
    }
}
